"""
## What it does
Flags a server with `trust: third-party` (the default trust) and
`placement: agent`.

## Why is this risky
A server placed in the agent's own sandbox shares its filesystem, processes,
environment and connections. Third-party server code has not been reviewed:
a malicious release (postmark-mcp added a hidden Bcc to every email) or a
hijacked package then runs with everything the agent can reach, not just what
the server needs. Give unvetted servers a dedicated sandbox, where mounts,
secrets and egress are scoped to them alone.

## Example
```yaml
version: 1
project: demo
servers:
  weather:
    trust: third-party
    placement: agent
    command: [weather-mcp]
    tools:
      forecast: {effects: []}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  weather:
    trust: third-party
    placement: dedicated
    command: [weather-mcp]
    tools:
      forecast: {effects: []}
```

## References
- MCP Security Best Practices: Local MCP Server Compromise
- OWASP MCP Top 10: MCP04 Software Supply Chain Attacks & Dependency Tampering
- OWASP Top 10 for Agentic Applications: ASI04 Agentic Supply Chain Vulnerabilities
- CWE-653 Improper Isolation or Compartmentalization; CWE-829 Inclusion of Functionality from Untrusted Control Sphere
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule


def check(plan: Plan) -> Iterator[Finding]:
    for server in plan.servers.values():
        if server.trust == "third-party" and server.placement == "agent":
            yield Finding(
                path=(*server.path, "placement"),
                message=f"third-party server '{server.name}' runs inside the agent's own sandbox",
            )


RULE = Rule(
    id="PL002",
    slug="third-party-in-agent-sandbox",
    severity="medium",
    summary="A third-party server runs inside the agent's own sandbox",
    check=check,
    doc=__doc__ or "",
)
