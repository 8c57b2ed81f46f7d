"""
## What it does
Flags each host entry (`api.example.com:443`, `*.example.com:443`) in the
allow or deny list of a launched server with `egress.via: direct`.

## Why is this risky
`via: direct` compiles egress to IP rules only (iptables, Kubernetes
NetworkPolicy, systemd `IPAddressAllow=`/`IPAddressDeny=`); none of them can
match a host name. A target either drops the name entries, leaving the server
with less (or, for deny entries, more) access than the file says, or resolves
them once at deploy time and pins addresses that CDNs and clouds change by the
minute. Either way the policy you reviewed is not the one that runs. A
filtering proxy (`via: proxy`) checks the name of every connection.

## Example
```yaml
version: 1
project: demo
servers:
  docs:
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["docs.python.org:443"]
      via: direct
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
      allow: ["docs.python.org:443"]
      via: proxy
```

## References
- MCP Security Best Practices: SSRF mitigations, "Use Egress Proxies"
- systemd.resource-control: IPAddressAllow= takes addresses and prefixes only; Kubernetes NetworkPolicy ipBlock is CIDR-based
- CWE-693 Protection Mechanism Failure
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import Draft, merged


def check(plan: Plan) -> Iterator[Finding]:
    return merged(drafts(plan))


def drafts(plan: Plan) -> Iterator[Draft]:
    for server in facts.launched(plan):
        if server.egress.via != "direct":
            continue
        via = (Related(server.origin("egress.via"), "egress is enforced by IP rules only here"),)
        for which in ("allow", "deny"):
            for path, text, entries in facts.written_entries(server, which):
                names = tuple(entry.text for entry in entries if entry.kind != "cidr")
                if names:
                    # A preset (@metadata) is one finding: its names are the finding's items.
                    what = f"the names of {text}" if text.startswith("@") else text
                    yield Draft(path, server.name, f"{{who}} {{enforces|enforce}} egress by IP only, so {what} cannot be enforced", via,
                                items=names if text.startswith("@") else ())


RULE = Rule(
    id="NW006",
    slug="domain-allowlist-without-proxy",
    severity="high",
    summary="Egress entries name hosts but are enforced by IP rules only",
    check=check,
    doc=__doc__ or "",
)
