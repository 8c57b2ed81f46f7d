"""
## What it does
Flags a wildcard allow entry such as `*.example.com:443` when `example.com`
itself is not allowed on the same port: either the apex is not listed at all,
or it is listed only on other ports (`example.com:443` next to
`*.example.com:80` is most likely a typo).

## Why is this risky
`*.example.com` matches subdomains only (`api.example.com`,
`a.b.example.com`), never `example.com` itself. Authors who expect otherwise
find the server broken at run time and are tempted to "fix" it by opening
egress much wider than needed. Spelling both out keeps the allowlist exactly
as wide as intended.

## Example
```yaml
version: 1
project: demo
servers:
  docs:
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["*.readthedocs.io:443"]
```

## Use instead
```yaml
version: 1
project: demo
servers:
  docs:
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["readthedocs.io:443", "*.readthedocs.io:443"]
```

## References
- mcp-sandbox.yaml reference: `egress.allow` (`*.domain:port` matches subdomains only)
- CWE-183 Permissive List of Allowed Inputs
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import Draft, merged
from mcpspec.spec.values import Destination


def check(plan: Plan) -> Iterator[Finding]:
    return merged(drafts(plan))


def drafts(plan: Plan) -> Iterator[Draft]:
    for server in facts.launched(plan):
        entries = server.egress.allow
        for position, entry in enumerate(entries):
            if entry.kind != "wildcard":
                continue
            apex = entry.host[2:]
            apexes = [(p, e) for p, e in enumerate(entries) if e.kind == "domain" and e.host == apex]
            path = facts.entry_path(server, "allow", position)
            if not apexes:
                yield Draft(path, server.name, f"{{who}} {{allows|allow}} {entry.text}, which matches subdomains of {apex} but not {apex} itself")
            elif not any(same_ports(entry, e) for _, e in apexes):
                yield Draft(
                    path, server.name,
                    f"{{who}} {{allows|allow}} {entry.text} but {apex} only on {ports([e for _, e in apexes])}: likely a typo",
                    tuple(Related(facts.entry_path(server, "allow", p), f"{e.text} is allowed here") for p, e in apexes),
                )


def same_ports(wildcard: Destination, apex: Destination) -> bool:
    """Whether the apex entry is allowed on the wildcard's port (a missing port means every port)."""
    return apex.port is None or apex.port == wildcard.port


def ports(apexes: list[Destination]) -> str:
    """``port 443`` or ``ports 80, 8443`` (apex entries here always name a port)."""
    found = sorted({e.port for e in apexes if e.port is not None})
    return ("port " if len(found) == 1 else "ports ") + ", ".join(str(p) for p in found)


RULE = Rule(
    id="NW005",
    slug="wildcard-apex-mismatch",
    severity="low",
    summary="A wildcard allow entry does not cover its apex domain on the same port",
    check=check,
    doc=__doc__ or "",
)
