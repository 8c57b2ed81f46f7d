"""
## What it does
Flags `lifecycle.pause.allowed: true` without `max_paused`: a paused sandbox may stay paused, and
be resumed, at any time later.

## Why is this risky
Pausing keeps a sandbox's memory and disk as they were: the secrets handed to it, its workspace,
any process or file an attacker left in it. With no limit that state lives on indefinitely, long
after its credentials should have expired, and resumes with all of it. `max_paused` tears a paused
sandbox down after a bounded time.

## Example
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    lifecycle:
      pause: {allowed: true}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    lifecycle:
      pause: {allowed: true, max_paused: 24h}
```

## References
- OWASP Top 10 for Agentic Applications: ASI06 Memory & Context Poisoning
- CWE-613: Insufficient Session Expiration; CWE-226: Sensitive Information in Resource Not Removed Before Reuse
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import grouped, in_full, section_of, who


def check(plan: Plan) -> Iterator[Finding]:
    unlimited = (((*section_of(server, "lifecycle.pause.allowed"), "max_paused"), server) for server in launched(plan) if _unlimited(server))
    for path, group in grouped(unlimited).items():
        yield Finding(path=path, message=f"lifecycle.pause lets {who(group, in_full)} stay paused, secrets and state included, with no max_paused")


def _unlimited(server: EffectiveSandbox) -> bool:
    pause = server.lifecycle.pause
    return pause.allowed and pause.max_paused is None


RULE = Rule(
    id="LC006",
    slug="pause-without-limit",
    severity="low",
    summary="A paused sandbox may stay paused indefinitely",
    check=check,
    doc=__doc__ or "",
)
