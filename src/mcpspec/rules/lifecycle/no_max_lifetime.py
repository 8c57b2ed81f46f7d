"""
## What it does
Flags a server mcpspec launches whose `lifecycle.max_lifetime` is unset, so its sandbox may live for
ever however busy it is. A `mode: long-lived` server without one is named as such in the message.

## Why is this risky
The longer a sandbox lives, the more it accumulates: state from earlier tasks, files a prompt
injection planted, credentials that were meant to be short-lived, a process an attacker left behind.
A keep-alive loop defeats an idle timeout, so only a hard lifetime guarantees the sandbox (and
everything in it) is rebuilt from its clean template now and then.

## Example
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    lifecycle: {mode: long-lived, idle_timeout: 15m}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    lifecycle: {mode: per-task, idle_timeout: 15m, max_lifetime: 4h}
```

## References
- OWASP Top 10 for LLM Applications: LLM10 Unbounded Consumption
- OWASP Top 10 for Agentic Applications: ASI06 Memory & Context Poisoning
- CWE-613: Insufficient Session Expiration
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, in_full, who


def check(plan: Plan) -> Iterator[Finding]:
    unbounded = [server for server in launched(plan) if server.lifecycle.max_lifetime is None]
    for path, group in by_origin(unbounded, "lifecycle.max_lifetime").items():
        daemons = [server for server in group if _long_lived(server)]
        if daemons:
            modes = dict.fromkeys(server.origin("lifecycle.mode") for server in daemons)
            related = tuple(Related(mode, "mode: long-lived keeps one sandbox running") for mode in modes)
            yield Finding(path=path, message=f"no lifecycle.max_lifetime: the long-lived sandbox of {who(group, in_full)} may run forever", related=related)
        else:
            yield Finding(path=path, message=f"no lifecycle.max_lifetime: a sandbox of {who(group, in_full)} may run forever while kept busy")


def _long_lived(server: EffectiveSandbox) -> bool:
    return server.lifecycle.mode == "long-lived"


RULE = Rule(
    id="LC002",
    slug="no-max-lifetime",
    severity="medium",
    summary="A sandbox has no maximum lifetime",
    check=check,
    doc=__doc__ or "",
)
