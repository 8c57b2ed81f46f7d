"""
## What it does
Flags a secret that at least one server uses and whose `scopes` list is empty
or missing: the spec does not say what the credential may do. A credential
that really carries no scopes (a database password, whose role bounds it; a
webhook URL) says so with `scopes: none`, which this rule accepts.

## Why is this risky
A credential's scopes bound what a compromised or prompt-injected server can
do with it; with none declared, reviewers cannot tell a read-only token from
an owner's, and the rules that catch omnibus or mismatched scopes have
nothing to check. Unscoped credentials are also how a "read-only" server ends
up holding a token that can delete repositories. Write down the scopes the
credential actually carries, and issue one that carries no more.

## Example
```yaml
version: 1
project: demo
secrets:
  issues-token:
    provider: vault
    ref: github/token/issues
    ttl: 1h
servers:
  issues:
    command: [mcp-issues]
    secrets:
      - {use: issues-token, as: {env: GITHUB_TOKEN}}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  issues-token:
    provider: vault
    ref: github/token/issues
    ttl: 1h
    scopes: [issues:read]
servers:
  issues:
    command: [mcp-issues]
    secrets:
      - {use: issues-token, as: {env: GITHUB_TOKEN}}
```

## References
- MCP specification, Security Best Practices: Scope Minimization
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep
- CWE-272 Least Privilege Violation
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.secrets._common import in_use, users, uses


def check(plan: Plan) -> Iterator[Finding]:
    for name, secret, bound in in_use(plan):
        if secret.scopes:  # a list of scopes, or `none` said on purpose
            continue
        # Point at an empty `scopes: []` when written, else at the secret (where a waiver can name it).
        path: SpecPath = ("secrets", name, "scopes") if "scopes" in secret.model_fields_set else ("secrets", name)
        yield Finding(path=path, message=(
                f"secret {name!r} declares no scopes, so nothing bounds what it may do (used by {users(bound)}); "
                "list them (scopes: [issues:read]), or write 'scopes: none' for a credential that has none"
            ), related=uses(bound))


RULE = Rule(
    id="SE007",
    slug="secret-without-scope",
    severity="low",
    summary="A secret in use declares no scopes",
    check=check,
    doc=__doc__ or "",
)
