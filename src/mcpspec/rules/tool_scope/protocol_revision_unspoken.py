"""
## What it does
Flags a server whose `protocol_revisions` names a revision `mcpspec run` cannot
speak: a string that is no MCP revision (a typo such as `2025-11-52`), a
revision older than 2025-06-18, or a list with no revision the relay speaks.

## Why is this risky
`mcpspec run` speaks 2025-06-18, 2025-11-25 and 2026-07-28 to the client and to
the server, and refuses any other (error -32022). A revision it cannot speak is
silently dropped from the list: the server is offered fewer revisions than the
spec seems to allow, and a list with none left refuses every client, so the
gateway gets bypassed by wiring the client straight to the server. Revisions
before 2025-06-18 also predate the security requirements of the authorization
spec and structured tool output.

## Example
```yaml
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    protocol_revisions: ["2025-03-26", "2025-11-52"]
    tools:
      read_note: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    protocol_revisions: ["2025-11-25", "2026-07-28"]
    tools:
      read_note: {effects: [reads_private]}
```

## References
- MCP specification, Versioning: revisions are date strings; version negotiation (2025-06-18, 2025-11-25, 2026-07-28)
- MCP specification 2026-07-28 changelog: the initialize handshake removed, server/discover added
- docs/run.md, "Protocol revisions"
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.revisions import KNOWN, RELAYED, effective
from mcpspec.rules.base import Finding, Rule


def check(plan: Plan) -> Iterator[Finding]:
    spoken = ", ".join(RELAYED)
    for server in plan.servers.values():
        listed = server.protocol_revisions
        if listed == RELAYED:
            continue
        path = server.origin("protocol_revisions")
        for index, revision in enumerate(listed):
            if revision in RELAYED:
                continue
            why = "is older than any revision it speaks" if revision in KNOWN else "is not an MCP protocol revision"
            yield Finding(
                path=(*path, index),
                message=f"server '{server.name}' lists protocol revision {revision!r}, which `mcpspec run` cannot speak: it {why} ({spoken})",
                items=(revision,),
            )
        if not effective(listed):
            yield Finding(
                path=path,
                message=f"server '{server.name}' lists no protocol revision `mcpspec run` speaks ({spoken}): every client would be refused",
            )


RULE = Rule(
    id="TS010",
    slug="protocol-revision-unspoken",
    severity="medium",
    summary="A server lists a protocol revision `mcpspec run` cannot speak",
    check=check,
    doc=__doc__ or "",
)
