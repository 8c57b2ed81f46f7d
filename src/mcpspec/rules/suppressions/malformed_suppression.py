"""
## What it does
Reports a `# mcpspec:` comment that is not a complete suppression: one that is
not written `# mcpspec: ignore[RULE] reason: <why>`, names no rule, or gives
no reason. Such a comment suppresses nothing.

## Why is this risky
A suppression is an accepted risk. Without a reason nobody can review why the
risk was accepted, and a misspelt directive that silently did nothing would
leave the author believing a finding was handled when the report still has it,
or, worse, teach reviewers to ignore the report.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      # mcpspec: ignore[FS004]
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
- ruff RUF100 and hadolint DL1001 (suppression hygiene); SARIF 2.1.0 `suppressions[].justification`.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule


def check(plan: Plan) -> Iterator[Finding]:
    from mcpspec.rules.suppress import parse_inline

    _, malformed = parse_inline(plan.source.comments())
    for item in malformed:
        comment = item.comment
        span = comment.span
        yield Finding(path=(), message=f"suppression comment {item.problem}", span=span)


RULE = Rule(
    id="SU001",
    slug="malformed-suppression",
    severity="medium",
    summary="A suppression comment without a rule or a reason suppresses nothing",
    check=check,
    doc=__doc__ or "",
)
