"""How far an allowlist reaches, in words: ranges that cover a whole address family are named as such.

``0.0.0.0/0`` is not one destination among three: it is every IPv4 address, and a reviewer
must read it so. Entries are grouped by port (an entry without a port covers every port), and
a family counts as covered when the ranges allowed on a port (or on every port) together span
it, so ``0.0.0.0/1`` with ``128.0.0.0/1`` reads as all IPv4 too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from mcpspec.report.review.values import plural
from mcpspec.spec.values import Destination


def _covers(networks: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network], version: int) -> bool:
    listed = list(networks)
    if version == 4:
        return ipaddress.IPv4Network("0.0.0.0/0") in ipaddress.collapse_addresses(n for n in listed if isinstance(n, ipaddress.IPv4Network))
    return ipaddress.IPv6Network("::/0") in ipaddress.collapse_addresses(n for n in listed if isinstance(n, ipaddress.IPv6Network))


def _families(words: set[int]) -> str:
    return "all addresses" if words == {4, 6} else ("all IPv4" if 4 in words else "all IPv6")


def egress_reach(allow: Sequence[Destination]) -> str:
    """``egress to 2 destinations``, ``egress to all IPv4 and 2 other destinations``, ``egress to all addresses``..."""
    cidrs = [d for d in allow if d.kind == "cidr"]
    everywhere = {v for v in (4, 6) if _covers((d.network for d in cidrs if d.port is None), v)}
    wide: dict[int | None, set[int]] = {None: everywhere} if everywhere else {}
    for port in sorted({d.port for d in cidrs if d.port is not None}):
        versions = {v for v in (4, 6) if v not in everywhere and _covers((d.network for d in cidrs if d.port in (None, port)), v)}
        if versions:
            wide[port] = versions
    if not wide:
        return f"egress to {plural(len(allow), 'destination')}"
    # An entry is in a phrase when its family is covered on every port, or on its own port.
    covered = [d for d in cidrs if d.network.version in wide.get(None, set()) | wide.get(d.port, set())]
    phrases = [_families(versions) + ("" if port is None else f" on port {port}") for port, versions in wide.items()]
    others = len(allow) - len(covered)
    return "egress to " + ", ".join(phrases) + (f" and {plural(others, 'other destination')}" if others else "")
