"""
## What it does
Flags a server mcpspec launches whose `lifecycle.idle_timeout` is unset, so a sandbox nobody uses
any more is never torn down for being idle.

## Why is this risky
Agents abandon sessions all the time: a closed editor, a crashed client, a task given up half way.
Without an idle timeout the abandoned sandbox keeps its compute, its issued credentials, its open
connections and whatever state (or planted files) the last task left in it, for anyone who can
still reach it. Idle teardown bounds that window to minutes.

## Example
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    lifecycle: {mode: per-session, max_lifetime: 4h}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    lifecycle: {mode: per-session, idle_timeout: 15m, max_lifetime: 4h}
```

## References
- OWASP Top 10 for LLM Applications: LLM10 Unbounded Consumption
- MCP specification, Security Best Practices: session hijacking (sessions should expire)
- CWE-613: Insufficient Session Expiration
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, in_full, who


def check(plan: Plan) -> Iterator[Finding]:
    idle = [server for server in launched(plan) if server.lifecycle.idle_timeout is None]
    for path, group in by_origin(idle, "lifecycle.idle_timeout").items():
        yield Finding(path=path, message=f"no lifecycle.idle_timeout: an abandoned sandbox of {who(group, in_full)} is never torn down for being idle")


RULE = Rule(
    id="LC001",
    slug="no-idle-timeout",
    severity="medium",
    summary="An idle sandbox is never torn down",
    check=check,
    doc=__doc__ or "",
)
