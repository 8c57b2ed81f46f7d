"""
## What it does
Reports a `waivers:` entry that matches no finding: its rule reports nothing
at or below its `at` path.

## Why is this risky
A waiver that covers nothing documents a risk that is gone, or points at a
path that moved; either way it misleads reviewers and would silently accept
the next finding that lands there.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      - {from: /srv/data, to: /data, mode: ro}
waivers:
  - {rule: FS004, at: "servers.files.mounts[0]", reason: "migration", expires: 2099-01-01}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      - {from: /srv/data, to: /data, mode: ro}
```

## References
- ruff RUF100 (unused-noqa), applied to structured waivers.
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="SU005",
    slug="unused-waiver",
    severity="low",
    summary="A waiver matches no finding",
    check=None,
    doc=__doc__ or "",
)
