"""
## What it does
Reported by `mcpspec build` when the spec asks a server for a boundary control
(mounts, hidden paths, identity, environment, secrets, egress, metadata
blocking, listeners, resource limits, lifetime) that the chosen target cannot
enforce at all for that server. The build writes nothing.

## Why is this risky
A target that silently leaves out a boundary grants more than the spec says:
a reviewer approves "no network" and the artifact runs with the host's
network. Failing the build keeps the artifact and the reviewed spec the same.

## Example
```yaml
# target: bwrap
version: 1
project: demo
servers:
  fetch:
    command: [mcp-server-fetch]
    egress:
      allow: ["docs.python.org:443"]
      via: direct          # bwrap cannot filter the host network
    tools:
      fetch: {effects: [reads_untrusted]}
```

## Use instead
```yaml
# target: bwrap
version: 1
project: demo
servers:
  fetch:
    command: [mcp-server-fetch]
    egress:
      allow: ["docs.python.org:443"]
      via: proxy           # the launcher starts a filtering proxy
    tools:
      fetch: {effects: [reads_untrusted]}
```
Or build for a target that enforces the control (see `targets/<name>/README.md`).

## References
- mcpspec architecture, "Fail closed": a target never grants more than the spec.
- gh-aw review: the compiler should raise an error for unenforceable combinations.
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="TG001",
    slug="boundary-not-enforced",
    severity="high",
    summary="The target cannot enforce a boundary the spec asks for",
    check=None,
    doc=__doc__ or "",
)
