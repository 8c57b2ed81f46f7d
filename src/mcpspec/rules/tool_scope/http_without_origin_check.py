"""
## What it does
Flags a launched HTTP or SSE server whose `transport.allowed_origins` is
unset, so the `Origin` header of incoming requests is not checked.
(`allowed_origins: []` accepts no browser origin at all and is fine.)

## Why is this risky
DNS rebinding lets any web page the user visits make requests to
`127.0.0.1:<port>` that the browser considers same-origin with the attacker's
site. A server that does not validate `Origin` answers them, so a page can
list and call the server's tools. The MCP transport spec says servers MUST
validate the `Origin` header on all incoming connections and answer 403 when
it is invalid.

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
      auth: {type: bearer}
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
- MCP specification, Transports: Streamable HTTP security warning ("MUST validate the Origin header")
- CVE-2025-49596 (MCP Inspector, reachable through DNS rebinding)
- OWASP MCP Top 10: MCP07 Insufficient Authentication & Authorization
- CWE-346 Origin Validation Error
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.tool_scope._common import http_servers, transport_path


def check(plan: Plan) -> Iterator[Finding]:
    for server, transport in http_servers(plan):
        if transport.allowed_origins is None:
            yield Finding(
                path=transport_path(server, "allowed_origins"),
                message=f"server '{server.name}' serves HTTP without checking the Origin header",
            )


RULE = Rule(
    id="TS003",
    slug="http-without-origin-check",
    severity="medium",
    summary="A launched HTTP server does not validate the Origin header",
    check=check,
    doc=__doc__ or "",
)
