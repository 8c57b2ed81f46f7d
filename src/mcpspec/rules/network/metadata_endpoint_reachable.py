"""
## What it does
Flags a launched server that can reach a cloud metadata endpoint (169.254.169.254,
fd00:ec2::254, 168.63.129.16, 100.100.100.200, metadata.google.internal,
kubernetes.default, host.docker.internal, ...): either its egress defaults to
allow and the deny list does not cover every one of them on every port, or an
allow entry names one (a CIDR overlapping a metadata address, or a metadata host name).

## Why is this risky
Metadata services hand out the credentials of the machine or pod the sandbox
runs on. One server-side request forgery, or one prompt-injected "fetch this
URL", turns into the cloud role's keys (the Capital One breach went exactly
this way). The IPv6 endpoints (fd00:ec2::254, fd20:ce::254) sit in the ULA
range, not link-local, so "block link-local" misses them. A deny entry with a
port (`169.254.169.254:80`) leaves the other ports open, and a host-name deny
entry is only enforced through a proxy (`via: proxy`).

## Example
```yaml
version: 1
project: demo
servers:
  fetch:
    kind: search
    command: [mcp-server-fetch]
    egress:
      default: allow
    tools:
      fetch: {effects: [reads_untrusted]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  fetch:
    kind: search
    command: [mcp-server-fetch]
    egress:
      default: deny
      allow: ["docs.python.org:443"]
    tools:
      fetch: {effects: [reads_untrusted]}
```

## References
- MCP Security Best Practices: Server-Side Request Forgery (SSRF), "including cloud metadata endpoints"
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure
- CWE-918 Server-Side Request Forgery
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import Draft, listing, merged
from mcpspec.rules.network._common import deny_covers_host, deny_covers_network, entry_network, host_matches

# A deny entry needs a dotted name, so single-label hosts (instance-data) cannot be listed;
# they resolve through the search domain to a dotted name that is on the list.
NAMEABLE_HOSTS = tuple(host for host in facts.METADATA_HOSTS if "." in host)


def check(plan: Plan) -> Iterator[Finding]:
    return merged(drafts(plan))


def drafts(plan: Plan) -> Iterator[Draft]:
    for server in facts.launched(plan):
        if facts.egress_open(server):
            open_to = unblocked(server)
            if open_to:
                yield Draft(
                    server.origin("egress.default"), server.name,
                    f"{{who}} may reach cloud metadata at {listing(open_to)} because egress defaults to allow",
                )
        yield from allowed_metadata(server)


def unblocked(server: EffectiveSandbox) -> list[str]:
    """Metadata addresses, then host names, that no deny entry covers."""
    addresses = [str(net.network_address) for net in facts.METADATA_NETWORKS if not deny_covers_network(server, net)]
    hosts = [host for host in NAMEABLE_HOSTS if not deny_covers_host(server, host)]
    return addresses + hosts


def allowed_metadata(server: EffectiveSandbox) -> Iterator[Draft]:
    for path, entry in facts.allow_entries(server):
        if entry.kind == "cidr":
            network = entry_network(entry)
            hit = [str(net.network_address) for net in facts.METADATA_NETWORKS
                   if facts.networks_overlap(network, net) and not deny_covers_network(server, net)]
        else:
            hit = [host for host in facts.METADATA_HOSTS if host_matches(entry, host) and not deny_covers_host(server, host)]
        if hit:
            yield Draft(path, server.name, f"{{who}} {{allows|allow}} {entry.text}, which reaches cloud metadata at {listing(hit)}")


RULE = Rule(
    id="NW001",
    slug="metadata-endpoint-reachable",
    severity="critical",
    summary="A launched server can reach a cloud metadata endpoint",
    check=check,
    doc=__doc__ or "",
)
