"""
## What it does
Flags a server reached at an `http://` URL (`transport.url`) whose host is not
loopback (127.0.0.0/8, ::1, localhost).

## Why is this risky
Plain HTTP sends every MCP message, and the bearer or OAuth token in its
`Authorization` header, in clear text to every network hop on the way: the
café Wi-Fi, a proxy, a compromised router. Anyone on the path can read the
token and replay it, or rewrite tool descriptions and results in flight to
inject instructions. The MCP authorization spec requires HTTPS for every
endpoint except loopback redirect URIs.

## Example
```yaml
version: 1
project: demo
servers:
  issues:
    placement: external
    transport:
      type: http
      url: http://mcp.example.com/mcp
      auth: {type: oauth2, audience: "https://mcp.example.com/mcp"}
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
      url: https://mcp.example.com/mcp
      auth: {type: oauth2, audience: "https://mcp.example.com/mcp"}
    tools:
      search: {effects: [reads_private]}
```

## References
- MCP specification, Authorization: Communication Security ("All authorization server endpoints MUST be served over HTTPS"); OAuth 2.1 §1.5
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP07 Insufficient Authentication & Authorization
- CWE-319 Cleartext Transmission of Sensitive Information
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.tool_scope._common import http_servers, loopback, transport_path


def check(plan: Plan) -> Iterator[Finding]:
    for server, transport in http_servers(plan, launched_only=False):
        url = transport.url
        if url is None or not url.lower().startswith("http://"):
            continue
        host = host_of(url)
        if not loopback(host):
            yield Finding(path=transport_path(server, "url"), message=f"server '{server.name}' is reached over plain HTTP at {host}")


def host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # a malformed [IPv6] host: not loopback as far as anyone can tell
        return ""


RULE = Rule(
    id="TS004",
    slug="plaintext-http-remote",
    severity="high",
    summary="A server is reached over plain HTTP on a non-loopback host",
    check=check,
    doc=__doc__ or "",
)
