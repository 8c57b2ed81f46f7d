"""
## What it does
Flags a server that declares no `tools`.

## Why is this risky
The spec is where a server's capabilities are stated: which tools read private
data, read untrusted content, execute code or send data out. With no tools
declared, mcpspec cannot tell what the server does, so the approval rules and
the cross-server flow rules see nothing and stay silent about it, and the
generated client configuration cannot restrict which tools are exposed. List
every tool the server offers with its effects (an empty `effects` list states
that a tool has none).

## Example
```yaml
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
```

## Use instead
```yaml
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    tools:
      list_notes: {description: List note titles., effects: [reads_private]}
```

## References
- MCP specification, Server: Tools (annotations are hints and untrusted unless the server is trusted)
- OWASP Top 10 for LLM Applications: LLM06 Excessive Agency
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule


def check(plan: Plan) -> Iterator[Finding]:
    for server in plan.servers.values():
        if not server.tools:
            yield Finding(
                path=(*server.path, "tools"),
                message=f"server '{server.name}' declares no tools, so what it can do is unknown",
            )


RULE = Rule(
    id="TS007",
    slug="tools-undeclared",
    severity="low",
    summary="A server declares no tools, so its capabilities are unknown",
    check=check,
    doc=__doc__ or "",
)
