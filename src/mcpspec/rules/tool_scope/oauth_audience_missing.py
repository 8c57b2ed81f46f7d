"""
## What it does
Flags an HTTP or SSE server with `auth: {type: oauth2}` and no `audience`.

## Why is this risky
Without a pinned audience the server (or the gateway in front of it) accepts
any token the authorization server issued, including tokens meant for other
services, and a token issued for it can be replayed against them. That is the
"token passthrough" anti-pattern the MCP spec forbids: servers MUST validate
that access tokens were issued specifically for them, and clients MUST send
the server's canonical URI as the RFC 8707 `resource`. Audit trails then lose
who really called, and one stolen token opens every service that shares the
authorization server.

## Example
```yaml
version: 1
project: demo
servers:
  issues:
    placement: external
    transport:
      type: http
      url: https://mcp.example.com/issues
      auth: {type: oauth2}
    tools:
      search: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  issues:
    placement: external
    transport:
      type: http
      url: https://mcp.example.com/issues
      auth: {type: oauth2, audience: "https://mcp.example.com/issues"}
    tools:
      search: {effects: [reads_private]}
```

## References
- MCP specification, Authorization: Token Audience Binding and Validation; Resource Indicators (RFC 8707)
- MCP Security Best Practices: Token Passthrough
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP07 Insufficient Authentication & Authorization
- CWE-287 Improper Authentication
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.tool_scope._common import http_servers, transport_path


def check(plan: Plan) -> Iterator[Finding]:
    for server, transport in http_servers(plan, launched_only=False):
        auth = transport.auth
        if auth is not None and auth.type == "oauth2" and not auth.audience:
            yield Finding(
                path=transport_path(server, "auth", "audience"),
                message=f"server '{server.name}' uses OAuth without an audience, so tokens issued for other services are accepted",
            )


RULE = Rule(
    id="TS005",
    slug="oauth-audience-missing",
    severity="high",
    summary="OAuth is configured without pinning the token audience",
    check=check,
    doc=__doc__ or "",
)
