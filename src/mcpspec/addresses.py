"""Which addresses a sandbox may reach: metadata endpoints and special-purpose ranges.

The rules (what a spec lets a server reach) and the targets (what the egress
proxy refuses) read the same table, so the linter never calls safe what the
proxy lets through.

Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC
6890 and its updates), plus multicast and the deprecated IPv6 forms that embed
an IPv4 address, has one verdict here:

``never``
    refused even when an allow entry covers it: cloud metadata endpoints, "this
    host" (``0.0.0.0/8``, ``::``; a connection to it reaches any local
    listener), and the IPv6 forms that carry an IPv4 address inside, which would
    otherwise reach a refused IPv4 range under another spelling.
``refused``
    refused after name resolution unless an allow entry names the address:
    loopback, private, shared (CGNAT), link-local, unique-local, documentation,
    benchmarking, multicast, reserved and the other ranges that are not
    globally reachable.
``reachable``
    globally reachable public services (AS112 DNS sinks, AMT relays): nothing
    on the host or its network, so the proxy treats them as any other address.

The IPv4-mapped block ``::ffff:0:0/96`` is refused as IPv4: squid, like the
kernel, stores every IPv4 address in that form and matches a mapped address
against the IPv4 ranges, so ``::ffff:127.0.0.1`` is loopback and is refused
as such. (Telling squid ``::ffff:0:0/96``, or a range that contains it such as
``::/8``, would refuse every IPv4 destination.)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Verdict = Literal["never", "refused", "reachable"]


@dataclass(frozen=True, slots=True)
class SpecialRange:
    network: IPNetwork
    name: str
    verdict: Verdict
    why: str
    # Whether it holds the host's own services or its networks' (what a request forged
    # from inside aims at): the rules' "private ranges". Test, documentation and
    # discard ranges are refused by the proxy but are nobody's internal network.
    internal: bool = True


def _range(text: str, name: str, verdict: Verdict, why: str, internal: bool = True) -> SpecialRange:
    return SpecialRange(ipaddress.ip_network(text), name, verdict, why, internal)


# Cloud metadata endpoints (169.254.0.0/16 as a whole is link-local, below).
METADATA_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(text)
    for text in (
        "169.254.169.254/32", "169.254.170.2/32", "169.254.170.23/32", "168.63.129.16/32", "100.100.100.200/32",
        "192.0.0.192/32", "169.254.0.23/32", "169.254.42.42/32",
        "fd00:ec2::254/128", "fd00:ec2::23/128", "fd20:ce::254/128", "fd00:42::42/128",
    )
)
METADATA_HOSTS = (
    "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    "metadata.tencentyun.com", "metadata.platformequinix.com", "metadata.packet.net",
    "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
    "host.docker.internal", "gateway.docker.internal",
)

SPECIAL_RANGES: tuple[SpecialRange, ...] = (
    # --- IPv4 Special-Purpose Address Registry ---
    _range("0.0.0.0/8", '"This network" (0.0.0.0/32 "this host")', "never", "a connection to 0.0.0.0 reaches the host's own listeners, whatever they are bound to"),
    _range("10.0.0.0/8", "Private-Use (RFC 1918)", "refused", "the host's private network"),
    _range("100.64.0.0/10", "Shared Address Space (CGNAT, RFC 6598)", "refused", "the provider's network; Alibaba's metadata service lives here"),
    _range("127.0.0.0/8", "Loopback", "refused", "the host's own services"),
    _range("169.254.0.0/16", "Link Local", "never", "cloud metadata services (169.254.169.254 and others) and the link's devices"),
    _range("172.16.0.0/12", "Private-Use (RFC 1918)", "refused", "the host's private network (container bridges)"),
    _range("192.0.0.0/24", "IETF Protocol Assignments (DS-Lite, PCP and TURN anycast, NAT64 discovery, Oracle metadata)", "refused",
           "PCP anycast (192.0.0.9) answers on the local gateway and opens ports on it; nothing here is a web service"),
    _range("192.0.2.0/24", "Documentation (TEST-NET-1)", "refused", "not routed; only a misconfigured network answers", internal=False),
    _range("192.31.196.0/24", "AS112-v4", "reachable", "globally reachable DNS sinks"),
    _range("192.52.193.0/24", "AMT", "reachable", "globally reachable multicast relays"),
    _range("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "refused", "deprecated relays into 6to4, which embeds IPv4 addresses", internal=False),
    _range("192.168.0.0/16", "Private-Use (RFC 1918)", "refused", "the host's private network (home and office routers)"),
    _range("192.175.48.0/24", "Direct Delegation AS112 Service", "reachable", "globally reachable DNS sinks"),
    _range("198.18.0.0/15", "Benchmarking", "refused", "not globally reachable; test networks of the operator"),
    _range("198.51.100.0/24", "Documentation (TEST-NET-2)", "refused", "not routed; only a misconfigured network answers", internal=False),
    _range("203.0.113.0/24", "Documentation (TEST-NET-3)", "refused", "not routed; only a misconfigured network answers", internal=False),
    _range("224.0.0.0/4", "Multicast (not in the registry)", "refused", "not a destination for a proxied connection"),
    _range("240.0.0.0/4", "Reserved, with 255.255.255.255/32 Limited Broadcast", "refused", "not routed; broadcast reaches every host of the link"),
    # --- IPv6 Special-Purpose Address Registry ---
    _range("::/128", "Unspecified", "never", "a connection to :: reaches the host's own listeners, whatever they are bound to"),
    _range("::/96", "Loopback (::1/128) and the deprecated IPv4-compatible addresses (::a.b.c.d)", "refused",
           "::1 is the host's own services; ::a.b.c.d carries an IPv4 address that squid would not check as IPv4"),
    _range("::ffff:0:0/96", "IPv4-mapped", "refused", "an IPv4 address in IPv6 form: squid checks it as that IPv4 address (see above)"),
    _range("::ffff:0:0:0/96", "IPv4-translated (SIIT, RFC 2765)", "never", "carries an IPv4 address"),
    _range("64:ff9b::/96", "IPv4-IPv6 Translat. (NAT64 well-known prefix)", "never",
           "on a NAT64 network 64:ff9b::a9fe:a9fe is 169.254.169.254; IPv4-only names synthesised by DNS64 are refused too"),
    _range("64:ff9b:1::/48", "IPv4-IPv6 Translat. (local-use NAT64)", "never", "carries an IPv4 address on the local network"),
    _range("100::/64", "Discard-Only", "refused", "a black hole, never a destination", internal=False),
    _range("100:0:0:1::/64", "Dummy IPv6 Prefix", "refused", "not a destination", internal=False),
    _range("2001::/23", "IETF Protocol Assignments (Teredo 2001::/32, PCP/TURN/DNS-SD anycast, Benchmarking 2001:2::/48, AMT, AS112-v6, ORCHID, DETs)",
           "never", "Teredo carries the client's IPv4 address and NAT mapping; the rest is anycast control, test or overlay space, never a web service"),
    _range("2001:db8::/32", "Documentation", "refused", "not routed", internal=False),
    _range("2002::/16", "6to4", "never", "carries an IPv4 address (2002:a9fe:a9fe:: is 169.254.169.254)"),
    _range("2620:4f:8000::/48", "Direct Delegation AS112 Service", "reachable", "globally reachable DNS sinks"),
    _range("3fff::/20", "Documentation", "refused", "not routed", internal=False),
    _range("5f00::/16", "Segment Routing (SRv6) SIDs", "refused", "not globally reachable; the operator's routing fabric", internal=False),
    _range("fc00::/7", "Unique-Local", "refused", "the host's private network (AWS and GCP metadata answer on fd00:ec2::254 and fd20:ce::254)"),
    _range("fe80::/10", "Link-Local Unicast", "refused", "the link's devices"),
    _range("fec0::/10", "Site-Local (deprecated, RFC 3879; not in the registry)", "refused", "the site's private network on old setups"),
    _range("ff00::/8", "Multicast (not in the registry)", "refused", "not a destination for a proxied connection"),
)

NEVER_NETWORKS: tuple[IPNetwork, ...] = (*METADATA_NETWORKS, *(r.network for r in SPECIAL_RANGES if r.verdict == "never"))
REFUSED_NETWORKS: tuple[IPNetwork, ...] = tuple(r.network for r in SPECIAL_RANGES if r.verdict == "refused")
# What the rules call private ranges: the refused ranges that are someone's internal network.
PRIVATE_NETWORKS: tuple[IPNetwork, ...] = tuple(r.network for r in SPECIAL_RANGES if r.verdict != "reachable" and r.internal)

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


def squid_form(networks: tuple[IPNetwork, ...]) -> list[str]:
    """``networks`` as squid ``dst`` values: without the IPv4-mapped block, which squid
    checks through the IPv4 ranges (a range that holds it would match every IPv4 address),
    and without a network inside another one of the list (squid warns about those)."""
    out: list[str] = []
    for network in networks:
        if any(other != network and subnet_of(network, other) for other in networks):
            continue
        if isinstance(network, ipaddress.IPv6Network) and network.overlaps(_MAPPED):
            if network.subnet_of(_MAPPED):
                continue
            out.extend(str(part) for part in sorted(network.address_exclude(_MAPPED)))
        else:
            out.append(str(network))
    return list(dict.fromkeys(out))


def networks_overlap(a: IPNetwork, b: IPNetwork) -> bool:
    return a.version == b.version and a.overlaps(b)


def subnet_of(inner: IPNetwork, outer: IPNetwork) -> bool:
    """Whether every address of ``inner`` is in ``outer`` (never across IP versions)."""
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]
