"""
## What it does
Reports a suppression comment, or a `waivers:` entry, that names a rule
mcpspec does not have.

## Why is this risky
A typo in the rule name (`FS04`, `credential-mounted`) means the finding the
author meant to accept is still reported, or the comment is stale after a rule
was renamed, and nobody notices that the suppression no longer does anything.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      # mcpspec: ignore[FS04] reason: the importer rewrites /data in place
      - {from: /srv/data, to: /data, mode: rw}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      # mcpspec: ignore[FS004] reason: the importer rewrites /data in place
      - {from: /srv/data, to: /data, mode: rw}
```

## References
- `mcpspec rules` lists every rule ID and slug.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule


def check(plan: Plan) -> Iterator[Finding]:
    from mcpspec.rules.registry import find
    from mcpspec.rules.suppress import parse_inline

    suppressions, _ = parse_inline(plan.source.comments())
    for item in suppressions:
        comment = item.comment
        span = comment.span
        for name in item.unknown:
            yield Finding(path=(), message=f"suppression names {name!r}, which is no rule (see `mcpspec rules`)", span=span)
    for index, waiver in enumerate(plan.waivers):
        if find(waiver.rule) is None:
            yield Finding(path=("waivers", index, "rule"), message=f"waiver names {waiver.rule!r}, which is no rule (see `mcpspec rules`)")


RULE = Rule(
    id="SU002",
    slug="suppression-unknown-rule",
    severity="medium",
    summary="A suppression comment or waiver names a rule that does not exist",
    check=check,
    doc=__doc__ or "",
)
