"""
## What it does
Flags a secret that at least one server uses and that declares no `ttl`: how
long one issued value stays valid. A credential that has no expiry (a Slack bot
token, a static API key) says so with `ttl: none`, which this rule accepts: the
reviewer then sees a decision, not an omission (and `rotation.every` is where
its lifetime is bounded).

## Why is this risky
A credential without an expiry stays useful to whoever copies it: out of a
tool result, a log, a crash dump or a compromised sandbox, for months. A
short-lived credential issued per session (Vault dynamic secrets, STS, an
OAuth access token, a GitHub App installation token) limits a leak to
minutes or hours, and `teardown.revoke_secrets` can only revoke what was
issued. Declaring the ttl also documents what the provider must issue.

## Example
```yaml
version: 1
project: demo
secrets:
  issues-ro:
    provider: env
    ref: ISSUES_TOKEN_RO
    scopes: [issues:read]
servers:
  issues:
    command: [mcp-issues]
    secrets:
      - {use: issues-ro, as: {env: GITHUB_TOKEN}}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  issues-ro:
    provider: vault
    ref: github/token/issues-ro
    scopes: [issues:read]
    ttl: 1h
servers:
  issues:
    command: [mcp-issues]
    secrets:
      - {use: issues-ro, as: {env: GITHUB_TOKEN}}
```

## References
- MCP specification, Authorization: token lifetime and rotation (OAuth 2.1 short-lived access tokens)
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure
- CWE-324 Use of a Key Past its Expiration Date, CWE-613 Insufficient Session Expiration
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.secrets._common import in_use, users, uses


def check(plan: Plan) -> Iterator[Finding]:
    for name, secret, bound in in_use(plan):
        if secret.ttl is None:
            yield Finding(
                path=("secrets", name),
                message=(
                    f"secret {name!r} has no ttl: a leaked value stays valid (used by {users(bound)}); "
                    "give one (ttl: 1h), or write 'ttl: none' for a credential that does not expire"
                ),
                related=uses(bound),
            )


RULE = Rule(
    id="SE006",
    slug="secret-without-ttl",
    severity="low",
    summary="A secret in use has no ttl",
    check=check,
    doc=__doc__ or "",
)
