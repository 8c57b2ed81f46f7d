"""
## What it does
Flags `process.background.allowed: true` without both limits: `max_jobs` (how many background jobs
at once) and `max_runtime` (how long one may run).

## Why is this risky
A background job outlives the tool call that started it, so no call timeout and no approval covers
it any more. Unbounded, injected code can leave a miner, a beacon or a slow exfiltration loop running
for the sandbox's whole life, or fork jobs until the sandbox starves. Both limits make a stray job
end on its own.

## Example
```yaml
version: 1
project: demo
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    process:
      allow: [python]
      background: {allowed: true}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    process:
      allow: [python]
      background: {allowed: true, max_jobs: 2, max_runtime: 30m}
```

## References
- OWASP Top 10 for LLM Applications: LLM10 Unbounded Consumption
- OWASP Top 10 for Agentic Applications: ASI05 Unexpected Code Execution
- CWE-770: Allocation of Resources Without Limits or Throttling
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import grouped, in_full, section_of, who


def check(plan: Plan) -> Iterator[Finding]:
    unbounded = ((section_of(server, "process.background.allowed"), server) for server in launched(plan) if _missing(server))
    for path, group in grouped(unbounded).items():
        limits = dict.fromkeys(name for server in group for name in _missing(server))
        yield Finding(path=path, message=f"background jobs of {who(group, in_full)} have no {' and no '.join(limits)}")


def _missing(server: EffectiveSandbox) -> list[str]:
    """The limits an allowed background policy lacks (none when background jobs are off)."""
    background = server.process.background
    if not background.allowed:
        return []
    return [name for name, value in (("max_jobs", background.max_jobs), ("max_runtime", background.max_runtime)) if value is None]


RULE = Rule(
    id="SP008",
    slug="background-jobs-unbounded",
    severity="medium",
    summary="Background jobs may run without a count or time limit",
    check=check,
    doc=__doc__ or "",
)
