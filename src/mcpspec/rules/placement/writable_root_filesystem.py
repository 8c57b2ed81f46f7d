"""
## What it does
Flags a launched server with `runtime.read_only_root: false`, set on the
server or inherited from `defaults.runtime`.

## Why is this risky
With a writable root filesystem, code running in the sandbox (a compromised
dependency, an injected command) can replace binaries and libraries, plant
shell profiles or `sitecustomize.py` hooks, and keep that foothold for as long
as the sandbox lives, including across tool calls made for other tasks. A
read-only root confines writes to the mounts and tmpfs directories the spec
grants, which is also what makes the workspace the only thing worth
inspecting afterwards.

## Example
```yaml
version: 1
project: demo
defaults:
  runtime: {read_only_root: false}
servers:
  notes:
    command: [mcp-notes]
    tools:
      list_notes: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
defaults:
  runtime: {read_only_root: true}
servers:
  notes:
    command: [mcp-notes]
    tools:
      list_notes: {effects: [reads_private]}
```

## References
- CIS Docker Benchmark 5.12: mount the container's root filesystem as read only
- Kubernetes Pod Security: `securityContext.readOnlyRootFilesystem`
- CWE-732 Incorrect Permission Assignment for Critical Resource
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import Draft, merged


def check(plan: Plan) -> Iterator[Finding]:
    # One finding per place: a `false` in defaults is reported once, naming every server that inherits it.
    return merged(
        Draft(server.origin("runtime.read_only_root"), server.name, "{who} {runs|run} with a writable root filesystem")
        for server in facts.launched(plan)
        if not server.read_only_root
    )


RULE = Rule(
    id="PL003",
    slug="writable-root-filesystem",
    severity="medium",
    summary="A launched server runs with a writable root filesystem",
    check=check,
    doc=__doc__ or "",
)
