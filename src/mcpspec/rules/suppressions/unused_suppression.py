"""
## What it does
Reports an inline suppression that suppresses nothing: no finding of the rules
it names is reported on the line it covers (the comment's own line, or the
next line for a comment on a line of its own).

## Why is this risky
A stale suppression outlives the risk it accepted and will silently swallow
the next, unrelated finding of that rule on that line. Suppressions should be
exactly as many as the accepted risks. This rule is reported by the
suppression pass after every other rule has run.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      # mcpspec: ignore[FS004] reason: kept from an older layout
      - {from: /srv/data, to: /data, mode: ro}
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
- ruff RUF100 (unused-noqa).
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="SU003",
    slug="unused-suppression",
    severity="low",
    summary="An inline suppression suppresses nothing",
    check=None,
    doc=__doc__ or "",
)
