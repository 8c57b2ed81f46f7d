"""Egress questions the network rules share: what a deny list really covers, where an entry was written."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related
from mcpspec.rules.facts import IPNetwork
from mcpspec.spec.values import Destination

# How many offending values a message names before it says "and N more".
SHOWN = 3


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
        for entry in server.egress.deny or []
    )


def subnet_of(inner: IPNetwork, outer: IPNetwork) -> bool:
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def entry_network(entry: Destination) -> IPNetwork:
    """The network of a CIDR entry, IPv4-mapped and NAT64 forms read as the IPv4 they embed."""
    return as_ipv4(entry.network)


def deny_covers_host(server: EffectiveSandbox, host: str) -> bool:
    """Whether a deny entry refuses ``host`` on every port; names are only enforced through a proxy."""
    if server.egress.via == "direct":
        return False
    return any(entry.port is None and host_matches(entry, host) for entry in server.egress.deny or [])


def allow_entries(server: EffectiveSandbox) -> Iterator[tuple[SpecPath, Destination]]:
    """(spec path, entry) for each allow entry; the path is in ``defaults`` when the list came from there."""
    base = server.origin("egress.allow")
    for index, entry in facts.allowed_entries(server):
        yield (*base, index), entry


def deny_entries(server: EffectiveSandbox) -> Iterator[tuple[SpecPath, Destination]]:
    base = server.origin("egress.deny")
    for index, entry in enumerate(server.egress.deny or []):
        yield (*base, index), entry


def egress_servers(servers: Iterable[EffectiveSandbox]) -> Iterator[EffectiveSandbox]:
    """The servers whose egress mcpspec enforces: the launched ones."""
    return (server for server in servers if server.runs_here)


def listing(items: list[str], limit: int = SHOWN) -> str:
    """``a, b, c and 4 more``, or ``a, b and c`` when all fit."""
    rest = len(items) - limit
    if rest > 0:
        return f"{', '.join(items[:limit])} and {rest} more"
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


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


@dataclass(frozen=True, slots=True)
class Draft:
    """A finding about one server, before findings at the same place are merged.

    ``template`` holds ``{who}`` for the server phrase and ``{singular|plural}``
    verb pairs, so that one message can name several servers.
    """

    path: SpecPath
    server: str
    template: str
    related: tuple[Related, ...] = ()


def merged(drafts: Iterable[Draft]) -> Iterator[Finding]:
    """One finding per place and message.

    A value inherited from ``defaults`` is one place however many servers
    inherit it: report it once, naming every server it affects.
    """
    groups: dict[tuple[SpecPath, str], list[Draft]] = {}
    for draft in drafts:
        groups.setdefault((draft.path, draft.template), []).append(draft)
    for (path, template), group in groups.items():
        related = tuple(dict.fromkeys(item for draft in group for item in draft.related))
        yield Finding(path=path, message=render(template, [draft.server for draft in group]), related=related)


_VERB = re.compile(r"\{([^{}|]*)\|([^{}|]*)\}")
NAMED_SERVERS = 5


def render(template: str, servers: list[str]) -> str:
    plural = len(servers) > 1
    quoted = [f"'{name}'" for name in servers]
    who = f"servers {listing(quoted, NAMED_SERVERS)}" if plural else f"server {quoted[0]}"
    return _VERB.sub(lambda match: match.group(2 if plural else 1), template).replace("{who}", who)
