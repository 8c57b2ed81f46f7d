"""
## What it does
Flags a launched HTTP or SSE server with no `transport.auth`, or with
`auth: {type: none}`.

## Why is this risky
Without authentication every process that can open a connection to the port
can call the server's tools: other users on a shared machine, other
containers, and web pages through DNS rebinding. Binding to loopback narrows
who can connect but does not identify them. The MCP security best practices
say local HTTP servers should require an authorization token (or use stdio or
an access-restricted unix socket), and the transport spec says servers
SHOULD authenticate all connections.

## Example
```yaml
version: 1
project: demo
servers:
  browser:
    command: [mcp-browser, --port, "8931"]
    transport:
      type: http
      port: 8931
      allowed_origins: []
    tools:
      navigate: {effects: [reads_untrusted]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  browser:
    command: [mcp-browser, --port, "8931"]
    transport:
      type: http
      port: 8931
      auth: {type: bearer}
      allowed_origins: []
    tools:
      navigate: {effects: [reads_untrusted]}
```

## References
- MCP Security Best Practices: Local MCP Server Compromise
- MCP specification, Transports: Streamable HTTP security warning ("SHOULD implement proper authentication")
- OWASP MCP Top 10: MCP07 Insufficient Authentication & Authorization
- CWE-306 Missing Authentication for Critical Function
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.tool_scope._common import http_servers, transport_path


def check(plan: Plan) -> Iterator[Finding]:
    for server, transport in http_servers(plan):
        if transport.auth is None:
            yield Finding(path=transport_path(server, "auth"), message=f"server '{server.name}' serves HTTP without authentication")
        elif transport.auth.type == "none":
            yield Finding(path=transport_path(server, "auth", "type"), message=f"server '{server.name}' serves HTTP with auth type none")


RULE = Rule(
    id="TS002",
    slug="http-without-auth",
    severity="high",
    summary="A launched HTTP server accepts unauthenticated connections",
    check=check,
    doc=__doc__ or "",
)
