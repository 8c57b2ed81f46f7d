"""
## What it does
Flags a secret read from a file (provider `file`: an env file or a
credentials file) that is bound to every server mcpspec launches, when there
are two or more: the "one `.env` for everything" pattern. It is reported
once, at the secret's definition, with each binding as a related place.

## Why is this risky
A file that every server reads is usually a bundle: all of the project's
tokens in one place, each server needing one of them. Every server then
holds every credential, so the least trusted one (a fetcher reading
untrusted pages, a third-party package) can leak the most powerful. Split
the bundle into one secret per credential and bind each only to the server
that uses it.

## Example
```yaml
version: 1
project: demo
secrets:
  dotenv:
    provider: file
    ref: ~/projects/app/.env
servers:
  issues:
    command: [mcp-issues]
    secrets:
      - {use: dotenv, as: {file: /run/secrets/env}}
  fetch:
    command: [mcp-server-fetch]
    secrets:
      - {use: dotenv, as: {file: /run/secrets/env}}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  issues-token:
    provider: file
    ref: /etc/mcp/secrets/issues-token
    scopes: [issues:read]
    ttl: 8h
servers:
  issues:
    command: [mcp-issues]
    secrets:
      - {use: issues-token, as: {file: /run/secrets/issues-token}}
  fetch:
    command: [mcp-server-fetch]
```

## References
- MCP specification, Security Best Practices: Scope Minimization
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP02 Privilege Escalation via Scope Creep
- CWE-272 Least Privilege Violation
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.secrets._common import bindings


def check(plan: Plan) -> Iterator[Finding]:
    bound_by = bindings(plan)
    servers = [server.name for server in launched(plan)]
    if len(servers) < 2:
        return
    for name, secret in plan.spec.secrets.items():
        files = [ref for _, provider, ref in secret.every_source() if provider == "file"]  # whichever target reads the file
        if not files:
            continue
        bound = [(server, grant) for server, grant in bound_by[name] if server.runs_here]
        if {server.name for server, _ in bound} != set(servers):
            continue
        related = tuple(Related(grant.path, f"bound to server {server.name!r}") for server, grant in bound)
        message = f"file secret {name!r} ({files[0]}) is bound to every launched server ({len(servers)}), so each holds what any one needs"
        yield Finding(path=("secrets", name), message=message, related=related)


RULE = Rule(
    id="SE004",
    slug="shared-secret-file",
    severity="medium",
    summary="One secret file is bound to every launched server",
    check=check,
    doc=__doc__ or "",
)
