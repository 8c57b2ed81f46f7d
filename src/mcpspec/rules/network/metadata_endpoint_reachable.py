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
entry is only enforced through a proxy (`via: proxy`). The `@metadata` preset
(listed in full below) denies every one of them on every port: write
`deny: ["@metadata"]` (quoted: YAML reserves `@`). The JSON output lists what a
finding leaves open in its `items`.

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

or, when the server must reach the open web:

```yaml
    egress:
      default: allow
      deny: ["@metadata", "@private"]
```

## References
- MCP Security Best Practices: Server-Side Request Forgery (SSRF), "including cloud metadata endpoints"
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure
- CWE-918 Server-Side Request Forgery
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.presets import METADATA, doc_section
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import IPNetwork
from mcpspec.rules.grouping import Draft, listing, merged
from mcpspec.rules.network._common import allow_item_path, allow_items, deny_covers_host, deny_covers_network, host_network, item_text
from mcpspec.spec.values import Destination

# The @metadata preset is exactly what this rule checks: `deny: ["@metadata"]` answers it.
NAMEABLE_HOSTS = METADATA.hosts
FIX = f'add "{METADATA.ref}" to egress.deny'


def check(plan: Plan) -> Iterator[Finding]:
    return merged(drafts(plan))


def drafts(plan: Plan) -> Iterator[Draft]:
    for server in facts.launched(plan):
        if facts.egress_open(server):
            addresses, hosts = unblocked(server)
            if addresses or hosts:
                yield Draft(
                    server.origin("egress.default"), server.name,
                    f"{{who}} may reach cloud metadata because egress defaults to allow and egress.deny leaves {left_open(addresses, hosts)} open; {fix(server, addresses)}",
                    items=tuple(addresses + hosts),
                )
        yield from allowed_metadata(server)


def unblocked(server: EffectiveSandbox) -> tuple[list[str], list[str]]:
    """Metadata addresses, and host names, that no deny entry covers."""
    addresses = [str(net.network_address) for net in METADATA.networks if not deny_covers_network(server, net)]
    hosts = [host for host in NAMEABLE_HOSTS if not deny_covers_host(server, host)]
    return addresses, hosts


def left_open(addresses: Sequence[str], hosts: Sequence[str]) -> str:
    """``169.254.169.254``, or ``all 12 addresses and 11 names of @metadata``, or ``3 of the 12 addresses of @metadata``."""
    items = [*addresses, *hosts]
    if len(items) <= 2:
        return listing(items)
    parts = []
    if addresses:
        total = len(METADATA.networks)
        parts.append(f"all {total} addresses" if len(addresses) == total else f"{len(addresses)} of the {total} addresses")
    if hosts:
        total = len(NAMEABLE_HOSTS)
        parts.append(f"all {total} names" if len(hosts) == total else f"{len(hosts)} of the {total} names")
    return f"{' and '.join(parts)} of {METADATA.ref}"


def fix(server: EffectiveSandbox, addresses: Sequence[str]) -> str:
    """What to write: the preset, and a proxy when names can only be refused through one."""
    if server.egress.via != "direct":
        return FIX
    if addresses:
        return f"{FIX} and set egress.via: proxy (names are refused only through the proxy)"
    return "set egress.via: proxy: names in egress.deny are refused only through the proxy"


@functools.lru_cache(maxsize=1024)
def _metadata_overlapped(host: str) -> tuple[IPNetwork, ...]:
    """The metadata networks a CIDR entry (its ``host``) overlaps, in order: a fact of the entry's
    text alone, and the same entries recur across servers."""
    network = host_network(host)
    return tuple(net for net in METADATA.networks if facts.networks_overlap(network, net))


def _metadata_hosts_under() -> dict[str, tuple[str, ...]]:
    """Each domain with metadata hosts strictly under it -> those hosts, in METADATA_HOSTS order."""
    under: dict[str, list[str]] = {}
    for host in facts.METADATA_HOSTS:
        labels = host.split(".")
        for start in range(1, len(labels)):
            under.setdefault(".".join(labels[start:]), []).append(host)
    return {domain: tuple(hosts) for domain, hosts in under.items()}


_METADATA_HOSTS = frozenset(facts.METADATA_HOSTS)
_METADATA_HOSTS_UNDER = _metadata_hosts_under()


def named_metadata_hosts(entry: Destination) -> tuple[str, ...]:
    """The metadata hosts a domain or wildcard entry names (as ``host_matches`` reads it), in
    METADATA_HOSTS order: by lookup, where a scan of the hosts cost one comparison each per entry."""
    if entry.kind == "domain":
        return (entry.host,) if entry.host in _METADATA_HOSTS else ()
    if entry.kind == "wildcard":
        return _METADATA_HOSTS_UNDER.get(entry.host.removeprefix("*."), ())
    return ()


def allowed_metadata(server: EffectiveSandbox) -> Iterator[Draft]:
    for index, entries in allow_items(server.egress):
        hit: list[str] = []
        for entry in entries:
            if entry.kind == "cidr":
                hit += [str(net.network_address) for net in _metadata_overlapped(entry.host) if not deny_covers_network(server, net)]
            else:
                hit += [host for host in named_metadata_hosts(entry) if not deny_covers_host(server, host)]
        if hit:
            hit = list(dict.fromkeys(hit))
            where = f"cloud metadata at {listing(hit)}" if len(hit) <= 3 else f"{len(hit)} cloud metadata endpoints of {METADATA.ref}"
            text = item_text(entries)
            yield Draft(allow_item_path(server, index), server.name, f"{{who}} {{allows|allow}} {text}, which reaches {where}", items=tuple(hit))


RULE = Rule(
    id="NW001",
    slug="metadata-endpoint-reachable",
    severity="critical",
    summary="A launched server can reach a cloud metadata endpoint",
    check=check,
    doc=(__doc__ or "") + doc_section("metadata"),
)
