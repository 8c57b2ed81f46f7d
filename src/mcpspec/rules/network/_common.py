"""Egress questions the network rules share: what a deny list really covers, how an entry is read."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, EgressPolicy
from mcpspec.rules.facts import IPNetwork, subnet_of
from mcpspec.spec.values import Destination


def allow_items(egress: EgressPolicy) -> Sequence[tuple[int, tuple[Destination, ...]]]:
    """``egress.written("allow")``: the same items, without grouping when each is one entry (no preset in the list).

    A rule asks of every entry of every server and makes a path only for the few it reports
    (``allow_item_path``), where ``facts.written_entries`` makes one per item.
    """
    allow = egress.allow
    if not egress.allow_at or egress.allow_at == tuple(range(len(allow))):
        return [(index, (entry,)) for index, entry in enumerate(allow)]
    return egress.written("allow")


def allow_item_path(server: EffectiveSandbox, index: int) -> SpecPath:
    """Where item ``index`` of the server's allow list is written: the path ``facts.written_entries`` gives it."""
    return (*server.origin("egress.allow"), index)


def item_text(entries: tuple[Destination, ...]) -> str:
    """The text the spec wrote for an item: ``@private`` for a preset, else the entry's own."""
    first = entries[0]
    return f"@{first.preset}" if first.preset is not None else first.text


def host_matches(entry: Destination, host: str) -> bool:
    """Whether a domain or wildcard entry names ``host`` (a wildcard matches subdomains only)."""
    if entry.kind == "domain":
        return entry.host == host
    if entry.kind == "wildcard":
        return host.endswith(entry.host[1:])
    return False


def deny_covers_network(server: EffectiveSandbox, network: IPNetwork) -> bool:
    """Whether a deny entry refuses every port of every address of ``network``.

    Stricter than ``facts.denied``: a deny entry with a port leaves the other ports open.
    """
    return any(
        entry.kind == "cidr" and entry.port is None and subnet_of(network, entry.network)
        for entry in server.egress.deny
    )


def entry_network(entry: Destination) -> IPNetwork:
    """The network of a CIDR entry, IPv4-mapped and NAT64 forms read as the IPv4 they embed."""
    return host_network(entry.host)


@functools.lru_cache(maxsize=4096)
def host_network(host: str) -> IPNetwork:
    """``entry_network`` of a CIDR entry by its host text alone: a fact the network rules remember per
    text, where a cache keyed by the entry hashes a dataclass (in Python) on every lookup."""
    return as_ipv4(ipaddress.ip_network(host, strict=False))


def deny_covers_host(server: EffectiveSandbox, host: str) -> bool:
    """Whether a deny entry refuses ``host`` on every port; names are only enforced through a proxy."""
    if server.egress.via == "direct":
        return False
    return any(entry.port is None and host_matches(entry, host) for entry in server.egress.deny)


def domain_under(host: str, suffix: str) -> bool:
    """Whether ``host`` is ``suffix`` or one of its subdomains."""
    return host == suffix or host.endswith("." + suffix)


_EMBEDDING_V4 = (ipaddress.IPv6Network("::ffff:0:0/96"), ipaddress.IPv6Network("64:ff9b::/96"))


def as_ipv4(network: IPNetwork) -> IPNetwork:
    """The IPv4 network an IPv4-mapped or NAT64 IPv6 network stands for (``::ffff:169.254.169.254``)."""
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96:
        for prefix in _EMBEDDING_V4:
            if network.subnet_of(prefix):
                low = int(network.network_address) & 0xFFFFFFFF
                return ipaddress.IPv4Network((low, network.prefixlen - 96))
    return network
