"""
## What it does
Flags a launched HTTP or SSE server whose `transport.bind` is not a loopback
address: `0.0.0.0`, `::`, or any LAN or public address.

## Why is this risky
A server listening beyond loopback can be called by anything on the network:
other containers, other machines on the office or café Wi-Fi, and through DNS
rebinding any web page the user opens. Its tools then run for whoever connects.
The MCP Inspector proxy (CVE-2025-49596, CVSS 9.4) listened on 0.0.0.0 without
authentication, which let a web page spawn arbitrary commands. The MCP
transport spec says servers running locally SHOULD bind only to 127.0.0.1.

## Example
```yaml
version: 1
project: demo
servers:
  browser:
    command: [mcp-browser, --port, "8931"]
    transport:
      type: http
      bind: 0.0.0.0
      port: 8931
      auth: {type: bearer}
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
      bind: 127.0.0.1
      port: 8931
      auth: {type: bearer}
      allowed_origins: []
    tools:
      navigate: {effects: [reads_untrusted]}
```

## References
- MCP specification, Transports: Streamable HTTP security warning ("SHOULD bind only to localhost")
- CVE-2025-49596 (MCP Inspector)
- OWASP MCP Top 10: MCP07 Insufficient Authentication & Authorization
- CWE-1327 Binding to an Unrestricted IP Address
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.tool_scope._common import http_servers, loopback, transport_path

EVERY_INTERFACE = ("0.0.0.0", "::")


def check(plan: Plan) -> Iterator[Finding]:
    for server, transport in http_servers(plan):
        bind = transport.bind  # the resolver binds every launched HTTP server (127.0.0.1 unless set)
        if bind is None or loopback(bind):
            continue
        what = "every interface" if bind in EVERY_INTERFACE else "a non-loopback address"
        yield Finding(path=transport_path(server, "bind"), message=f"server '{server.name}' listens on {bind} ({what})")


RULE = Rule(
    id="TS001",
    slug="http-bound-to-all-interfaces",
    severity="high",
    summary="A launched HTTP server listens on a non-loopback address",
    check=check,
    doc=__doc__ or "",
)
