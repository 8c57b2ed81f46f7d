"""Egress containment: every (host, port) a spec's policy lets through, the boundary's lets through too.

A policy's allowed set is ``base \\ deny``, where ``base`` is every destination when the default
is allow and the union of the allow entries otherwise. Names and addresses are separate spaces
(a name entry matches that name; a CIDR allow entry matches addresses a request names). A CIDR
deny entry refuses a name too, when the name resolves into it (the proxy checks every address a
name resolves to, as Cilium's egressDeny does): a name both files let through still leaks when the
boundary denies an address the spec does not, since the name may resolve there.
An IPv6 entry inside ``::ffff:0:0/96`` stands for the IPv4 addresses it maps, and one that
holds the whole block covers every IPv4 address too (the proxy checks a mapped address as
IPv4, see :mod:`mcpspec.addresses`).

The check is exact: names are split into the finitely many classes that the entries of both
policies can tell apart (each name written, and for each, its subdomains that no deeper
written name covers), addresses into the elementary intervals between the ends of every
network, and each class's allowed ports compared as interval sets. A class whose ports
differ yields one concrete witness.
"""

from __future__ import annotations

import bisect
import ipaddress
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from mcpspec.addresses import NEVER_NETWORKS, REFUSED_NETWORKS
from mcpspec.boundary import ports
from mcpspec.boundary.ports import Ports
from mcpspec.spec.values import Destination

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_MAPPED_LO = int(_MAPPED.network_address)
_MAPPED_HI = int(_MAPPED.broadcast_address)
_TOP = {4: 2**32 - 1, 6: 2**128 - 1}


@dataclass(frozen=True, slots=True)
class Span:
    """One address range of one family, [low, high], with the entry it came from."""

    family: int
    low: int
    high: int
    ports: Ports
    deny: bool
    entry: Destination | None


def address_spans(entry: Destination, deny: bool) -> list[Span]:
    """The address ranges a CIDR entry stands for, IPv4-mapped IPv6 read as IPv4."""
    network = entry.network
    entry_ports = ports.of(entry.port)
    if isinstance(network, ipaddress.IPv6Network):
        if network.subnet_of(_MAPPED):
            low = int(network.network_address) - _MAPPED_LO
            high = int(network.broadcast_address) - _MAPPED_LO
            return [Span(4, low, high, entry_ports, deny, entry)]
        spans = [Span(6, int(network.network_address), int(network.broadcast_address), entry_ports, deny, entry)]
        if network.supernet_of(_MAPPED):
            spans.append(Span(4, 0, _TOP[4], entry_ports, deny, entry))
        return spans
    return [Span(4, int(network.network_address), int(network.broadcast_address), entry_ports, deny, entry)]


@dataclass(frozen=True, slots=True)
class Pieces:
    """One family's address space cut into elementary intervals, each with its allowed ports."""

    starts: list[int]
    allowed: list[Ports]

    def at(self, address: int) -> Ports:
        return self.allowed[bisect.bisect_right(self.starts, address) - 1]


def pieces(family: int, spans: Sequence[Span], default_allow: bool) -> Pieces:
    """Sweep the spans: between two consecutive ends, the same entries apply."""
    cuts = {0}
    if family == 6:
        cuts.update((_MAPPED_LO, _MAPPED_HI + 1))
    for span in spans:
        cuts.add(span.low)
        if span.high < _TOP[family]:
            cuts.add(span.high + 1)
    starts = sorted(cuts)
    opening: dict[int, list[Span]] = {}
    closing: dict[int, list[Span]] = {}
    for span in spans:
        opening.setdefault(span.low, []).append(span)
        closing.setdefault(span.high + 1, []).append(span)
    active: dict[int, Span] = {}
    allowed: list[Ports] = []
    for start in starts:
        for span in closing.get(start, ()):
            del active[id(span)]
        for span in opening.get(start, ()):
            active[id(span)] = span
        base = ports.ALL if default_allow else ports.union(s.ports for s in active.values() if not s.deny)
        denied = ports.union(s.ports for s in active.values() if s.deny)
        allowed.append(ports.minus(base, denied) if denied else base)
    return Pieces(starts, allowed)


@dataclass(slots=True)
class NamePolicy:
    """The name entries of one policy, by the domain they name."""

    default_allow: bool
    exact: dict[str, list[tuple[Ports, Destination]]] = field(default_factory=dict)
    wild: dict[str, list[tuple[Ports, Destination]]] = field(default_factory=dict)
    deny_exact: dict[str, list[Ports]] = field(default_factory=dict)
    deny_wild: dict[str, list[Ports]] = field(default_factory=dict)

    def add(self, entry: Destination, deny: bool) -> None:
        entry_ports = ports.of(entry.port)
        if entry.kind == "wildcard":
            domain = entry.host[2:]
            if deny:
                self.deny_wild.setdefault(domain, []).append(entry_ports)
            else:
                self.wild.setdefault(domain, []).append((entry_ports, entry))
        elif deny:
            self.deny_exact.setdefault(entry.host, []).append(entry_ports)
        else:
            self.exact.setdefault(entry.host, []).append((entry_ports, entry))

    def domains(self) -> Iterator[str]:
        yield from self.exact
        yield from self.wild
        yield from self.deny_exact
        yield from self.deny_wild

    def allowed(self, name: str) -> Ports:
        above = list(ancestors(name))
        if self.default_allow:
            base = ports.ALL
        else:
            base = ports.union([p for p, _ in self.exact.get(name, ())] + [p for a in above for p, _ in self.wild.get(a, ())])
            if not base:
                return base
        denied = ports.union([*self.deny_exact.get(name, ()), *(p for a in above for p in self.deny_wild.get(a, ()))])
        return ports.minus(base, denied) if denied else base

    def entry_for(self, name: str, port: int) -> Destination | None:
        """The allow entry that lets ``name:port`` through (None: the default does)."""
        pairs: list[tuple[Ports, Destination]] = [*self.exact.get(name, ()), *(pair for a in ancestors(name) for pair in self.wild.get(a, ()))]
        for entry_ports, entry in pairs:
            if any(low <= port <= high for low, high in entry_ports):
                return entry
        return None


def ancestors(name: str) -> Iterator[str]:
    """The strict parent domains of ``name``: a.b.c -> b.c, c."""
    rest = name
    while "." in rest:
        rest = rest.split(".", 1)[1]
        yield rest


@dataclass(frozen=True, slots=True)
class Policy:
    """One egress policy, ready to compare: its names, and its address pieces per family."""

    names: NamePolicy
    spans: dict[int, list[Span]]
    pieces: dict[int, Pieces]
    known: frozenset[str]  # every domain written, and each of its parents
    under: dict[str, tuple[str, ...]]  # a domain -> the written domains strictly below it
    memo: dict[str, Ports] = field(default_factory=dict, compare=False)  # a boundary is asked again and again
    resolving: dict[int, list[Span]] = field(default_factory=dict, compare=False)  # see denied_by_resolution

    def allowed(self, name: str) -> Ports:
        """The ports the policy lets ``name`` through on (remembered)."""
        found = self.memo.get(name)
        if found is None:
            found = self.memo[name] = self.names.allowed(name)
        return found


def policy(default: str, allow: Sequence[Destination], deny: Sequence[Destination]) -> Policy:
    default_allow = default == "allow"
    names = NamePolicy(default_allow)
    spans: dict[int, list[Span]] = {4: [], 6: []}
    for entries, is_deny in ((allow, False), (deny, True)):
        for entry in entries:
            if entry.kind == "cidr":
                for span in address_spans(entry, is_deny):
                    spans[span.family].append(span)
            else:
                names.add(entry, is_deny)
    written = set(names.domains())
    known = set(written)
    under: dict[str, list[str]] = {}
    for domain in written:
        for parent in ancestors(domain):
            known.add(parent)
            under.setdefault(parent, []).append(domain)
    return Policy(
        names,
        spans,
        {family: pieces(family, spans[family], default_allow) for family in (4, 6)},
        frozenset(known),
        {key: tuple(value) for key, value in under.items()},
    )


@dataclass(frozen=True, slots=True)
class Leak:
    """One destination the spec allows and the boundary does not, and the spec entry that allows it
    (None: the spec's ``default: allow``)."""

    host: str
    port: int
    entry: Destination | None
    resolved: str | None = None  # a name's address that the boundary denies and the spec does not

    @property
    def request(self) -> str:
        request = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        return request if self.resolved is None else f"{request} resolving to {self.resolved}"


def leaks(spec: Policy, boundary: Policy) -> list[Leak]:
    """One witness per spec entry (or default) that lets through something the boundary does not."""
    found: dict[int, Leak] = {}
    if spec.names.default_allow:
        # Names no spec entry allows are let through by the default: one witness is enough.
        for leak in _name_leaks(spec, boundary, _open_candidates(spec, boundary)):
            found.setdefault(id(leak.entry), leak)
            if leak.entry is None:
                break
    for leak in _name_leaks(spec, boundary, _entry_candidates(spec, boundary)):
        found.setdefault(id(leak.entry), leak)
    resolving = _resolution_denied(spec, boundary)
    if resolving:
        names = _entry_candidates(spec, boundary)
        if spec.names.default_allow:
            names = itertools.chain(_open_candidates(spec, boundary), names)
        for leak in _resolution_leaks(spec, resolving, names):
            found.setdefault(id(leak.entry), leak)
    for family in (4, 6):
        for leak in _address_leaks(family, spec, boundary):
            found.setdefault(id(leak.entry), leak)
    return list(found.values())


def _fresh(parent: str, known: frozenset[str], other: frozenset[str]) -> str:
    """A name directly below ``parent`` that neither policy writes nor holds a written name below;
    for ``""``, a name none of whose parents either policy writes."""
    number = 0
    while True:
        label = f"unlisted{number or ''}"
        name = f"{label}.{parent}" if parent else f"{label}.{('invalid', 'test')[number % 2]}{number // 2 or ''}"
        top = name.split(".", 1)[1]
        if name not in known and name not in other and (parent or (top not in known and top not in other)):
            return name
        number += 1


def _open_candidates(spec: Policy, boundary: Policy) -> Iterator[str]:
    """For a spec whose default is allow: one name of every class either policy tells apart."""
    yield _fresh("", spec.known, boundary.known)
    for domain in (*sorted(spec.known), *sorted(boundary.known)):  # sorted: the same witness in every process
        yield domain
        yield _fresh(domain, spec.known, boundary.known)


def _entry_candidates(spec: Policy, boundary: Policy) -> Iterator[str]:
    """One name of every class inside the spec's allow entries that the two policies tell apart."""
    yield from spec.names.exact
    for domain in spec.names.wild:
        yield _fresh(domain, spec.known, boundary.known)
        for below in (*spec.under.get(domain, ()), *boundary.under.get(domain, ())):
            yield below
            yield _fresh(below, spec.known, boundary.known)


def _unique(candidates: Iterator[str]) -> Iterator[str]:
    seen: set[str] = set()
    for name in candidates:
        if name not in seen:
            seen.add(name)
            yield name


def _name_leaks(spec: Policy, boundary: Policy, candidates: Iterator[str]) -> Iterator[Leak]:
    for name in _unique(candidates):
        allowed = spec.names.allowed(name)
        if not allowed:
            continue
        excess = ports.minus(allowed, boundary.allowed(name))
        if excess:
            port = excess[0][0]
            yield Leak(name, port, spec.names.entry_for(name, port))


# What every target refuses for a name whatever the spec says (mcpspec.addresses): the never ranges
# always; the refused ranges too, but for the parts a spec's CIDR allow entry lists (squid refuses
# them for names anyway, Cilium's toFQDNs policy lets a name reach them: the check assumes the latter).
_NEVER = tuple((n.version, int(n.network_address), int(n.broadcast_address)) for n in NEVER_NETWORKS)
_REFUSED = tuple((n.version, int(n.network_address), int(n.broadcast_address)) for n in REFUSED_NETWORKS)


def _spans(ranges: Sequence[tuple[int, int, int]], family: int, deny: bool) -> list[Span]:
    return [Span(family, low, high, ports.ALL, deny, None) for version, low, high in ranges if version == family]


def _allowed_spans(family: int, spans: Sequence[Span]) -> list[Span]:
    """The intervals (with their ports) that ``spans`` leave allowed under a default deny."""
    cut = pieces(family, spans, default_allow=False)
    ends = [*cut.starts[1:], _TOP[family] + 1]
    return [Span(family, low, end - 1, allowed, False, None) for low, end, allowed in zip(cut.starts, ends, cut.allowed, strict=True) if allowed]


def denied_by_resolution(policy: Policy, family: int) -> list[Span]:
    """What the policy's CIDR denies refuse of one family outside the never ranges, as allow spans
    (remembered: a boundary is asked once per server)."""
    found = policy.resolving.get(family)
    if found is None:
        denies = [Span(family, s.low, s.high, s.ports, False, s.entry) for s in policy.spans[family] if s.deny]
        found = policy.resolving[family] = _allowed_spans(family, [*denies, *_spans(_NEVER, family, True)]) if denies else []
    return found


def _covered(spans: Sequence[Span], denies: Sequence[Span]) -> bool:
    """Whether every span lies inside the union of ``denies`` (a quick answer for the usual case of a
    spec that denies what the boundary does; False sends the caller to the exact sweep)."""
    merged: list[list[int]] = []
    for low, high in sorted((d.low, d.high) for d in denies):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    starts = [low for low, _ in merged]
    for span in spans:
        index = bisect.bisect_right(starts, span.low) - 1
        if index < 0 or merged[index][1] < span.high:
            return False
    return True


def _resolution_denied(spec: Policy, boundary: Policy) -> list[tuple[int, int, Ports]]:
    """(family, address, ports): one address of each interval that the boundary's CIDR denies refuse
    and neither the spec's denies nor the ranges every target refuses for a name do, with the ports
    on which that holds."""
    found: list[tuple[int, int, Ports]] = []
    for family in (4, 6):
        theirs = denied_by_resolution(boundary, family)
        if not theirs or _covered(theirs, [s for s in spec.spans[family] if s.deny and s.ports == ports.ALL]):
            continue
        listed = [Span(family, s.low, s.high, ports.ALL, True, None) for s in spec.spans[family] if not s.deny]
        refused = [Span(family, s.low, s.high, s.ports, True, None) for s in _allowed_spans(family, [*_spans(_REFUSED, family, False), *listed])]
        cut = pieces(family, [*theirs, *(s for s in spec.spans[family] if s.deny), *refused], default_allow=False)
        found += [(family, start, allowed) for start, allowed in zip(cut.starts, cut.allowed, strict=True) if allowed]
    return found


def _resolution_leaks(spec: Policy, denied: list[tuple[int, int, Ports]], candidates: Iterator[str]) -> Iterator[Leak]:
    for name in _unique(candidates):
        allowed = spec.names.allowed(name)
        for family, address, refused in denied:
            excess = ports.minus(allowed, ports.minus(allowed, refused))
            if excess:
                port = excess[0][0]
                yield Leak(name, port, spec.names.entry_for(name, port), _address(family, address))
                break


def _address_leaks(family: int, spec: Policy, boundary: Policy) -> Iterator[Leak]:
    mine, theirs = spec.pieces[family], boundary.pieces[family]
    ends = [*mine.starts[1:], _TOP[family] + 1]
    for start, end, allowed in zip(mine.starts, ends, mine.allowed, strict=True):
        if not allowed or (family == 6 and _MAPPED_LO <= start <= _MAPPED_HI):
            continue
        index = bisect.bisect_right(theirs.starts, start) - 1
        position = start
        while position < end:
            excess = ports.minus(allowed, theirs.allowed[index])
            if excess:
                port = excess[0][0]
                yield Leak(_address(family, position), port, _span_entry(spec.spans[family], position, port))
                break
            index += 1
            if index >= len(theirs.starts):
                break
            position = theirs.starts[index]


def _address(family: int, value: int) -> str:
    return str(ipaddress.IPv4Address(value) if family == 4 else ipaddress.IPv6Address(value))


def _span_entry(spans: Sequence[Span], address: int, port: int) -> Destination | None:
    for span in spans:
        if not span.deny and span.low <= address <= span.high and any(low <= port <= high for low, high in span.ports):
            return span.entry
    return None
