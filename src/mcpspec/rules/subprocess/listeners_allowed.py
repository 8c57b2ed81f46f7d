"""
## What it does
Flags `process.listeners: true` on a server mcpspec launches: the server (and anything it spawns) may
open listening sockets.

## Why is this risky
A listening socket is a way in. Code the model runs can start a server that other sandboxes, other
local processes or, with a permissive network, other hosts can reach: a reverse shell's bind port, a
debug endpoint, a proxy around the egress policy. A stdio server never needs one, and an HTTP
server's own MCP port comes from its `transport`, not from this switch.

## Example
```yaml
version: 1
project: demo
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    process: {allow: [python], listeners: true}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    process: {allow: [python], listeners: false}
```

## References
- OWASP Top 10 for Agentic Applications: ASI05 Unexpected Code Execution
- CWE-1327: Binding to an Unrestricted IP Address; CWE-284: Improper Access Control
- MCP specification, Streamable HTTP transport: servers running locally should bind only to localhost
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, in_full, who


def check(plan: Plan) -> Iterator[Finding]:
    listening = [server for server in launched(plan) if server.process.listeners]
    for path, group in by_origin(listening, "process.listeners").items():
        yield Finding(path=path, message=f"process.listeners true lets {who(group, in_full)} open listening sockets")


RULE = Rule(
    id="SP007",
    slug="listeners-allowed",
    severity="medium",
    summary="A server may open listening sockets",
    check=check,
    doc=__doc__ or "",
)
