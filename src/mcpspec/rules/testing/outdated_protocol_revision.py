"""
## What it does
Flags a `protocol_revision` earlier than 2025-06-18.

## Why is this risky
The revision says which MCP security requirements the servers are built and
tested against. Before 2025-06-18 the authorization specification did not
require resource indicators (RFC 8707) or that servers accept only tokens
issued for them as the audience, so token passthrough and replay across
services were not ruled out; tools had no structured output to validate
against a schema. Revision 2024-11-05 also lacks tool annotations (read-only,
destructive, open-world hints). Testing against an outdated revision certifies
servers against requirements that no longer hold.

## Example
```yaml
version: 1
project: demo
protocol_revision: "2025-03-26"
servers:
  fetch:
    command: [mcp-server-fetch]
```

## Use instead
```yaml
version: 1
project: demo
protocol_revision: "2025-11-25"
servers:
  fetch:
    command: [mcp-server-fetch]
```

## References
- MCP specification 2025-06-18 changelog: resource indicators (RFC 8707) required of clients, servers classified as OAuth resource servers, structured tool output
- MCP specification 2025-03-26 changelog: tool annotations introduced
- MCP specification, Basic > Authorization: audience validation, no token passthrough
- OWASP MCP Top 10: MCP07 Insufficient Authentication & Authorization
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule

# Revisions are ISO dates, so string order is date order.
CURRENT_BASELINE = "2025-06-18"
ANNOTATIONS_SINCE = "2025-03-26"


def check(plan: Plan) -> Iterator[Finding]:
    revision = plan.protocol_revision
    if revision >= CURRENT_BASELINE:
        return
    missing = "resource indicators, audience-bound tokens and structured tool output"
    if revision < ANNOTATIONS_SINCE:
        missing = "resource indicators, audience-bound tokens, structured tool output and tool annotations"
    # The default revision is current, so an old one is always written at the top level.
    yield Finding(path=("protocol_revision",), message=f"protocol_revision {revision} predates {CURRENT_BASELINE}: it lacks {missing}")


RULE = Rule(
    id="TE002",
    slug="outdated-protocol-revision",
    severity="low",
    summary="The MCP protocol revision predates 2025-06-18 and its security requirements",
    check=check,
    doc=__doc__ or "",
)
