"""
## What it does
Reported by `mcpspec build` when a name, path or command of the spec cannot be
written safely in the target's language: a command given as one shell string,
a path with a space or colon in a systemd path list, a control character in a
unit setting. The build writes nothing.

## Why is this risky
Generated shell scripts and unit files are code. A value that is neither
quoted exactly nor refused can change what the artifact does: a colon splits
a bind mount into two settings, a `$(...)` runs a command. mcpspec quotes
every value it can and refuses the rest.

## Example
```yaml
# target: systemd
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    mounts:
      - {from: "/srv/team notes", to: /notes}
    tools:
      read: {effects: [reads_private]}
```

## Use instead
```yaml
# target: systemd
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    mounts:
      - {from: /srv/team-notes, to: /notes}
    tools:
      read: {effects: [reads_private]}
```

## References
- systemd.exec(5): BindPaths= takes colon- and space-separated lists.
- CWE-78: OS command injection.
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="TG004",
    slug="value-not-representable",
    severity="high",
    summary="A value cannot be written safely in the target's language",
    check=None,
    doc=__doc__ or "",
)
