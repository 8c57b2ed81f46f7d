"""
## What it does
Flags a server whose `transport.type` is `sse`, the HTTP+SSE transport of
protocol revision 2024-11-05.

## Why is this risky
HTTP+SSE has been deprecated since revision 2025-03-26 in favour of Streamable
HTTP (`type: http`) and is formally marked Deprecated in 2026-07-28. Its
implementations are the least maintained and predate the transport's security
requirements (Origin validation, session handling); clients are dropping it,
so a deployment built on it tends to be kept alive with old, unpatched server
and bridge versions.

## Example
```yaml
version: 1
project: demo
servers:
  fetch:
    command: [mcp-fetch, --sse]
    transport:
      type: sse
      port: 3001
      auth: {type: bearer}
      allowed_origins: []
    tools:
      fetch: {effects: [reads_untrusted]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  fetch:
    command: [mcp-fetch]
    transport:
      type: http
      port: 3001
      auth: {type: bearer}
      allowed_origins: []
    tools:
      fetch: {effects: [reads_untrusted]}
```

## References
- MCP specification 2025-03-26, Transports: HTTP with SSE replaced by Streamable HTTP (backwards compatibility section)
- MCP specification 2026-07-28 changelog: SEP-2596 deprecates HTTP+SSE
- CWE-477 Use of Obsolete Function
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.tool_scope._common import http_servers, transport_path


def check(plan: Plan) -> Iterator[Finding]:
    for server, transport in http_servers(plan, launched_only=False):
        if transport.type == "sse":
            yield Finding(
                path=transport_path(server, "type"),
                message=f"server '{server.name}' uses the deprecated HTTP+SSE transport",
            )


RULE = Rule(
    id="TS006",
    slug="deprecated-sse-transport",
    severity="medium",
    summary="A server uses the deprecated HTTP+SSE transport",
    check=check,
    doc=__doc__ or "",
)
