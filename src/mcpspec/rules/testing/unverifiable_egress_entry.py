"""
## What it does
Flags an egress allow entry that the egress conformance probe cannot test: a
domain or wildcard with every port (`api.example.com:*`), or an address range
wider than a /16 (IPv4) or a /48 (IPv6).

## Why is this risky
The egress conformance probe mcpspec runs against a generated sandbox proves
that each allowed destination is reachable and nothing else is, so a target
that enforces the policy wrongly is caught before it ships. An entry with every
port or a huge range cannot be probed (65535 ports, or tens of thousands of
addresses and more), so a mistake in how a target enforces it, wider or
narrower, goes unnoticed. Such entries are usually broader than the server needs as
well: list the ports and the narrow ranges it really talks to.

## Example
```yaml
version: 1
project: demo
servers:
  fetch:
    command: [mcp-server-fetch]
    egress:
      allow: ["api.example.com:*", "10.0.0.0/8"]
```

## Use instead
```yaml
version: 1
project: demo
servers:
  fetch:
    command: [mcp-server-fetch]
    egress:
      allow: ["api.example.com:443", "10.20.30.0/24:5432"]
```

## References
- MCP Security Best Practices, Server-Side Request Forgery: use egress proxies and block private ranges
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep
- CWE-284: Improper Access Control
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import commas, grouped, in_full, who
from mcpspec.spec.values import Destination

WIDEST_PREFIX = {4: 16, 6: 48}


def why_unverifiable(entry: Destination) -> str | None:
    """Why the probe cannot test ``entry``, or None when it can."""
    if entry.kind == "cidr":
        network = entry.network
        widest = WIDEST_PREFIX[network.version]
        return f"is wider than /{widest}" if network.prefixlen < widest else None
    return "opens every port" if entry.port is None else None


def written_reason(text: str, entries: tuple[Destination, ...]) -> str | None:
    """Why the probe cannot test what one written entry stands for; a preset (@rfc1918) names its untestable entries."""
    if not text.startswith("@"):
        return why_unverifiable(entries[0])
    wide = [entry.text for entry in entries if why_unverifiable(entry) is not None]
    return f"holds {in_full(wide)}, too wide or on every port" if wide else None


def all_verifiable(entries: tuple[Destination, ...]) -> bool:
    """Whether the probe can test every entry, so that no written entry has a reason (most servers)."""
    return all(why_unverifiable(entry) is None for entry in entries)


def check(plan: Plan) -> Iterator[Finding]:
    # Entries inherited from defaults share one path: report each place once, naming every server.
    places = grouped(
        ((path, text, reason), server)
        for server in facts.launched(plan)
        if not all_verifiable(server.egress.allow)
        for path, text, entries in facts.written_entries(server, "allow")
        if (reason := written_reason(text, entries)) is not None
    )
    for (path, text, reason), group in places.items():
        yield Finding(path=path, message=f"allow entry '{text}' of {who(group, commas)} {reason}, which the egress conformance probe cannot test")


RULE = Rule(
    id="TE001",
    slug="unverifiable-egress-entry",
    severity="low",
    summary="An egress allow entry cannot be checked by the egress conformance probe",
    check=check,
    doc=__doc__ or "",
)
