"""What the egress proxy refuses whatever a spec says, so that a spec whose only extra lies there
is no excess (see :mod:`mcpspec.targets.egress`, the squid rules every target with a proxy writes).

For a server with ``via: proxy``, every target puts squid in front of it, and squid refuses:

- the metadata names (``metadata.google.internal``...) and the ``never`` ranges of
  :mod:`mcpspec.addresses` (metadata addresses, link-local, "this host", the IPv6 forms that
  carry an IPv4 address), before any allow entry;
- the other special-purpose ranges (loopback, private, documentation...) for every request no
  address entry of the spec lists: with ``default: allow``, a literal address in them is
  refused unless a CIDR or IP:port entry allows it.

The host's own public addresses are refused too, but they are known only on the machine at
launch: the check does not take them away (it may report such an address; it never hides one).
With ``via: direct`` a target filters by IP rules only, and bwrap filters nothing: nothing is
taken away.

A ``default: allow`` server's addresses are compared in two parts: what its address entries
allow, and the open part (every address outside the refused ranges, less its deny entries),
which many servers share and is compared once per deny list and ceiling.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence

from mcpspec.addresses import METADATA_HOSTS, NEVER_NETWORKS, REFUSED_NETWORKS
from mcpspec.boundary import egress
from mcpspec.ir.plan import EgressPolicy
from mcpspec.spec.values import Destination

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
# The open part's leaks, by (the boundary policy's id, the spec's address deny entries); the
# boundary policies live as long as the check that holds this cache.
OpenLeaks = dict[tuple[int, tuple[Destination, ...]], list[egress.Leak]]


@functools.cache
def _never() -> tuple[Destination, ...]:
    names = tuple(Destination("domain", host, None, f"{host}:*") for host in sorted(METADATA_HOSTS))
    return (*names, *(Destination("cidr", str(network), None, str(network)) for network in NEVER_NETWORKS))


@functools.cache
def _open() -> tuple[Destination, ...]:
    """Every address the proxy lets a ``default: allow`` reach, as entries on every port: all but
    the refused ranges (the IPv4-mapped block is read as IPv4, so it is left to the IPv4 ones)."""
    out: list[Destination] = []
    address: type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]
    for family, address, top in ((4, ipaddress.IPv4Address, 2**32 - 1), (6, ipaddress.IPv6Address, 2**128 - 1)):
        refused = sorted((int(n.network_address), int(n.broadcast_address)) for n in (*REFUSED_NETWORKS, _MAPPED) if n.version == family)
        start = 0
        for low, high in [*refused, (top + 1, top + 1)]:
            if low > start:
                networks = ipaddress.summarize_address_range(address(start), address(low - 1))
                out += (Destination("cidr", str(network), None, str(network)) for network in networks)
            start = max(start, high + 1)
    return tuple(out)


@functools.cache
def _never_spans() -> tuple[tuple[Destination, tuple[egress.Span, ...]], ...]:
    return tuple((entry, tuple(egress.address_spans(entry, True))) for entry in _never() if entry.kind == "cidr")


def _touching(allow: Sequence[Destination]) -> list[Destination]:
    """The never entries that take something from these allow entries (the others change nothing,
    and leaving them out keeps a large spec's comparison small)."""
    spans = [span for entry in allow if entry.kind == "cidr" for span in egress.address_spans(entry, False)]
    names = [entry for entry in allow if entry.kind != "cidr"]
    found: list[Destination] = []
    for entry in _never():
        if entry.kind != "cidr" and any(entry.host == name.host or (name.kind == "wildcard" and entry.host.endswith(name.host[1:])) for name in names):
            found.append(entry)
    for entry, never in _never_spans():
        if any(a.family == b.family and a.low <= b.high and b.low <= a.high for a in spans for b in never):
            found.append(entry)
    return found


def leaks(mine: EgressPolicy, limit: egress.Policy, opened: OpenLeaks) -> list[egress.Leak]:
    """:func:`egress.leaks` of what the server reaches at run time: its policy less what the proxy
    always refuses. A leak through the open part is the default's (entry None)."""
    if mine.via != "proxy":
        return egress.leaks(egress.policy(mine.default, mine.allow, mine.deny), limit)
    deny = (*mine.deny, *_touching(mine.allow))
    if mine.default != "allow":
        return egress.leaks(egress.policy("deny", mine.allow, deny), limit)
    names = [entry for entry in mine.allow if entry.kind != "cidr"]
    addresses = [entry for entry in mine.allow if entry.kind == "cidr"]
    # Names stay open (the default); addresses only where an address entry allows, or in the open part.
    listed = egress.policy("deny", addresses, deny)
    words = egress.policy("allow", names, [entry for entry in (*mine.deny, *_never()) if entry.kind != "cidr"])
    spec = egress.Policy(words.names, listed.spans, listed.pieces, words.known, words.under)
    found = egress.leaks(spec, limit)
    key = (id(limit), tuple(entry for entry in mine.deny if entry.kind == "cidr"))
    if key not in opened:
        opened[key] = _open_leaks(key[1], limit)
    if not any(leak.entry is None for leak in found):
        found += opened[key][:1]
    return found


def _open_leaks(deny: Sequence[Destination], limit: egress.Policy) -> list[egress.Leak]:
    part = egress.policy("deny", _open(), [*deny, *(entry for entry in _never() if entry.kind == "cidr")])
    return [egress.Leak(leak.host, leak.port, None) for leak in egress.leaks(part, limit)][:1]
