"""
## What it does
Flags a launched server whose egress defaults to allow while it holds secrets
or reads private data (a `reads_private` tool, or `kind: data`).

## Why is this risky
Open egress is the exfiltration leg of the "lethal trifecta": whatever the
server can read (its tokens, the database rows, the private repository) can be
sent to any host on the internet, by a prompt-injected tool call, by a
malicious dependency, or by a compromised server release (the postmark-mcp
package quietly copied every email it sent). An allowlist limits where the
data can go to the hosts the server actually needs.

## Example
```yaml
version: 1
project: demo
secrets:
  db-ro: {provider: env, ref: DB_URL_RO}
servers:
  db:
    kind: data
    command: [mcp-server-postgres]
    secrets:
      - {use: db-ro, as: {env: DATABASE_URL}}
    egress:
      default: allow
    tools:
      query: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  db-ro: {provider: env, ref: DB_URL_RO}
servers:
  db:
    kind: data
    command: [mcp-server-postgres]
    secrets:
      - {use: db-ro, as: {env: DATABASE_URL}}
    egress:
      default: deny
      allow: ["db.internal.example.com:5432"]
    tools:
      query: {effects: [reads_private]}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP10 Context Injection & Over-Sharing
- OWASP Top 10 for LLM Applications: LLM02 Sensitive Information Disclosure
- CWE-200 Exposure of Sensitive Information to an Unauthorized Actor
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import Draft, merged


def check(plan: Plan) -> Iterator[Finding]:
    return merged(drafts(plan))


def drafts(plan: Plan) -> Iterator[Draft]:
    for server in facts.launched(plan):
        if not facts.egress_open(server):
            continue
        holds, reads = facts.holds_secrets(server), facts.reads_private(server)
        if not (holds or reads):
            continue
        what = " and ".join(part for part, present in (("{holds|hold} secrets", holds), ("{reads|read} private data", reads)) if present)
        yield Draft(
            server.origin("egress.default"), server.name,
            f"{{who}} {what} and may send them anywhere because egress defaults to allow",
            evidence(server),
        )


def evidence(server: EffectiveSandbox) -> tuple[Related, ...]:
    """The secret bindings and private-reading tools that make open egress a leak."""
    related = [Related(grant.path, f"secret '{grant.name}' is handed to the server here") for grant in server.secrets]
    related += [Related(facts.tool_path(server, name), f"tool '{name}' reads private data") for name in facts.tools_with(server, "reads_private")]
    return tuple(related)


RULE = Rule(
    id="NW002",
    slug="open-egress-with-secrets",
    severity="high",
    summary="A server holding secrets or private data may send them to any host",
    check=check,
    doc=__doc__ or "",
)
