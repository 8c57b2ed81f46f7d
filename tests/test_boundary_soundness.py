"""Egress containment against an independent oracle: what `check --within` says about two policies
is true of every concrete request sampled from the spec's allowed set.

The oracle decides one request by reading the entries as docs/boundary.md defines them, without
the classes, intervals or sweeps of mcpspec.boundary.egress: if the check passes, no sampled
request the spec allows is refused by the boundary; and every witness the check prints is a
request the spec allows and the boundary refuses.

A request for a name carries the address the name resolves to (or none drawn), because the
proxy (and Cilium's egressDeny) refuses a name whose address a CIDR deny entry holds, and every
target refuses the special ranges of mcpspec.addresses for a name but where a spec's CIDR allow
entry lists them (mcpspec.targets.egress, k8s.network): an oracle that kept names and addresses
apart trusted the check's own model and missed a boundary's CIDR deny.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpspec.addresses import NEVER_NETWORKS, REFUSED_NETWORKS
from mcpspec.boundary import egress
from mcpspec.spec.values import Destination, parse_destination

NAMES = ["acme.example", "api.acme.example", "a.api.acme.example", "python.org", "docs.python.org", "x.acme.example"]
NETWORKS = ["8.8.8.0/24", "2606:4700::/32", "10.0.0.0/8", "10.1.0.0/16", "10.1.2.3", "203.0.113.0/24", "0.0.0.0/0", "2001:db8::/32", "2001:db8::1", "::ffff:10.1.0.0/112", "::/64", "::/0", "fd00::/8"]
PORTS = [None, 80, 443, 8080, 1, 65535]
MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


def _text(host: str, port: int | None, cidr: bool) -> str:
    if cidr:
        if port is None:
            return host
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"{host}:{'*' if port is None else port}"


entries = st.one_of(
    st.builds(lambda n, p: _text(n, p, False), st.sampled_from(NAMES), st.sampled_from(PORTS)),
    st.builds(lambda n, p: _text("*." + n, p, False), st.sampled_from(NAMES), st.sampled_from(PORTS)),
    st.builds(lambda n, p: _text(n, p, True), st.sampled_from(NETWORKS), st.sampled_from(PORTS)),
).map(parse_destination)


@dataclass(frozen=True)
class Written:
    default: str
    allow: list[Destination]
    deny: list[Destination]


policies = st.builds(Written, st.sampled_from(["deny", "deny", "allow"]), st.lists(entries, max_size=5), st.lists(entries, max_size=3))


def _as_ipv4(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(MAPPED):
        base = network.network_address.ipv4_mapped
        assert base is not None
        return ipaddress.IPv4Network((base, network.prefixlen - 96))
    return network


def _matches(entry: Destination, host: str, port: int) -> bool:
    if entry.port is not None and entry.port != port:
        return False
    if entry.kind == "domain":
        return host == entry.host
    if entry.kind == "wildcard":
        return host.endswith(entry.host[1:])
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    network = _as_ipv4(entry.network)
    if address.version == network.version:
        return address in network
    # An IPv6 range that holds every mapped address holds every IPv4 address.
    return address.version == 4 and isinstance(network, ipaddress.IPv6Network) and network.supernet_of(MAPPED)


def _in(address: str, networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    parsed = ipaddress.ip_address(address)
    return any(parsed in network for network in networks)


def oracle(policy: Written, host: str, port: int, resolved: str | None = None, ceiling: bool = False) -> bool:
    """Whether ``policy`` lets a request for ``host:port`` through; for a name, ``resolved`` is the
    address it resolves to when that is known. Every target refuses a name the never ranges; a
    spec's name reaches the refused ranges only where a CIDR allow entry of its lists them (Cilium's
    toFQDNs; squid refuses even those), while a ``ceiling`` (the boundary) is read as written."""
    allowed = policy.default == "allow" or any(_matches(e, host, port) for e in policy.allow)
    if not allowed or any(_matches(e, host, port) for e in policy.deny):
        return False
    if resolved is None:
        return True
    if _in(resolved, NEVER_NETWORKS) or any(e.kind == "cidr" and _matches(e, resolved, port) for e in policy.deny):
        return False
    listed = any(e.kind == "cidr" and _matches(e, resolved, e.port or port) for e in policy.allow)
    return ceiling or listed or not _in(resolved, REFUSED_NETWORKS)


def _address_in(draw: st.DrawFn, network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str:
    return str(network.network_address + draw(st.integers(0, network.num_addresses - 1)))


@st.composite
def requests(draw: st.DrawFn, policy: Written, boundary: Written | None = None) -> tuple[str, int, str | None]:
    """A request drawn from the spec's entries (or anywhere, for a default allow); a name's request
    may resolve to an address of a network of NETWORKS, most often one the boundary denies."""
    port = draw(st.one_of(st.sampled_from([80, 443, 8080, 1, 65535, 22]), st.integers(1, 65535)))
    pool = policy.allow + policy.deny
    if not pool or draw(st.booleans()):
        host = draw(st.sampled_from([*NAMES, "x.api.acme.example", "other.test", "10.1.2.3", "8.8.8.8", "::ffff:10.1.2.3", "2001:db8::5", "::1"]))
    else:
        entry = draw(st.sampled_from(pool))
        port = entry.port if entry.port is not None and draw(st.booleans()) else port
        if entry.kind == "cidr":
            return _address_in(draw, entry.network), port, None
        host = entry.host if entry.kind == "domain" else draw(st.sampled_from(["x", "api", "a.api", "deep.x"])) + entry.host[1:]
    if any(char.isdigit() for char in host.split(".")[-1]) or ":" in host:
        return host, port, None
    denied = [e.network for e in (boundary.deny if boundary is not None else []) if e.kind == "cidr"]
    pool = st.sampled_from(denied) if denied and draw(st.booleans()) else st.sampled_from([ipaddress.ip_network(n) for n in NETWORKS])
    if draw(st.booleans()):
        return host, port, None
    return host, port, _address_in(draw, _as_ipv4(draw(pool)))


def _policy(written: Written) -> egress.Policy:
    return egress.policy(written.default, written.allow, written.deny)


@settings(max_examples=400, deadline=None)
@given(st.data(), policies, policies)
def test_a_passing_check_leaves_no_sampled_request_outside(data: st.DataObject, spec: Written, boundary: Written) -> None:
    found = egress.leaks(_policy(spec), _policy(boundary))
    for leak in found:
        assert oracle(spec, leak.host, leak.port, leak.resolved), f"the witness {leak.request} is not allowed by the spec"
        assert not oracle(boundary, leak.host, leak.port, leak.resolved, ceiling=True), f"the witness {leak.request} is allowed by the boundary"
    if found:
        return
    for _ in range(30):
        host, port, resolved = data.draw(requests(spec, boundary))
        if oracle(spec, host, port, resolved):
            assert oracle(boundary, host, port, resolved, ceiling=True), f"check passed, yet the spec allows {host}:{port} (resolving to {resolved}) and the boundary does not"


@settings(max_examples=200, deadline=None)
@given(policies)
def test_every_policy_is_within_itself(spec: Written) -> None:
    assert egress.leaks(_policy(spec), _policy(spec)) == []


@st.composite
def near_misses(draw: st.DrawFn) -> tuple[Written, Written]:
    """A spec and a boundary one edit away from it: an extra deny, or an allow entry dropped."""
    spec = draw(policies)
    if spec.allow and draw(st.booleans()):
        drop = draw(st.integers(0, len(spec.allow) - 1))
        return spec, Written(spec.default, spec.allow[:drop] + spec.allow[drop + 1 :], spec.deny)
    return spec, Written(spec.default, spec.allow, [*spec.deny, draw(entries)])


@settings(max_examples=400, deadline=None)
@given(st.data(), near_misses())
def test_near_miss_boundaries_are_judged_exactly(data: st.DataObject, pair: tuple[Written, Written]) -> None:
    spec, boundary = pair
    test_a_passing_check_leaves_no_sampled_request_outside.hypothesis.inner_test(data, spec, boundary)  # type: ignore[attr-defined]


def _leaks(spec: tuple[str, list[str], list[str]], boundary: tuple[str, list[str], list[str]]) -> list[str]:
    def built(default: str, allow: list[str], deny: list[str]) -> egress.Policy:
        return egress.policy(default, [parse_destination(t) for t in allow], [parse_destination(t) for t in deny])

    return [leak.request for leak in egress.leaks(built(*spec), built(*boundary))]


def test_a_wildcard_deny_below_a_wildcard_allow_leaves_its_subdomains_out() -> None:
    # api.acme.example itself stays allowed (a wildcard holds subdomains only); the names below it do not.
    assert _leaks(("deny", ["*.acme.example:443"], []), ("deny", ["*.acme.example:443"], ["*.api.acme.example:*"])) == ["unlisted.api.acme.example:443"]


def test_a_wildcard_does_not_hold_its_apex() -> None:
    assert _leaks(("deny", ["acme.example:443"], []), ("deny", ["*.acme.example:443"], [])) == ["acme.example:443"]


def test_ipv4_mapped_ipv6_is_checked_as_ipv4() -> None:
    assert _leaks(("deny", ["[::ffff:10.1.2.3]:443"], []), ("deny", ["10.0.0.0/8:443"], [])) == []
    assert _leaks(("deny", ["[::ffff:203.0.113.7]:443"], []), ("deny", ["10.0.0.0/8:443"], [])) == ["203.0.113.7:443"]
    # ::/0 holds every mapped address, so it reaches every IPv4 address too.
    assert _leaks(("deny", ["::/0"], []), ("deny", ["::/0"], [])) == []
    assert _leaks(("deny", ["::/0"], []), ("deny", ["::/1"], [])) == ["[8000::]:1"]
    assert _leaks(("deny", ["::/0"], []), ("deny", ["8000::/1"], [])) == ["0.0.0.0:1"]


def test_ports_are_compared_as_sets() -> None:
    assert _leaks(("deny", ["*.acme.example:*"], []), ("deny", ["*.acme.example:443"], [])) == ["unlisted.acme.example:1"]
    assert _leaks(("allow", [], ["10.0.0.0/8"]), ("allow", [], ["10.0.0.0/8:443"])) == []
    assert _leaks(("allow", [], ["10.0.0.0/8:443"]), ("allow", [], ["10.0.0.0/8"])) == ["10.0.0.0:1"]


def _yaml(policy: Written, in_defaults: bool, server: str) -> str:
    egress = f"{{default: {policy.default}, allow: {json.dumps([e.text for e in policy.allow])}, deny: {json.dumps([e.text for e in policy.deny])}}}"
    if in_defaults:
        return f"version: 1\nproject: p\ndefaults:\n  egress: {egress}\nservers:\n  {server}:\n    command: [x]\n"
    return f"version: 1\nproject: p\nservers:\n  {server}:\n    command: [x]\n    egress: {egress}\n"


@settings(max_examples=150, deadline=None)
@given(policies, policies, st.booleans(), st.booleans())
def test_through_whole_specs_every_excess_points_at_the_entry_that_allows_its_witness(spec: Written, boundary: Written, spec_defaults: bool, boundary_defaults: bool) -> None:
    """The same check through resolved plans, the policies written in `defaults` or on the server:
    each BX001 witness is a real counterexample, and its line is the entry (or default) that allows it."""
    from mcpspec.api import load_text
    from mcpspec.boundary.check import check

    text = _yaml(spec, spec_defaults, "fetch")
    plan, limits = load_text(text, "spec.yaml"), load_text(_yaml(boundary, boundary_defaults, "any-server"), "boundary.yaml")
    lines = text.splitlines()
    for excess in check(plan, limits):
        assert excess.code == "BX001", excess.message
        reached = excess.message.split(" may reach ", 1)[1]
        request = reached.split(" ", 1)[0]
        resolved = reached.split(" resolving to ", 1)[1].split(" ", 1)[0] if " resolving to " in reached.split(" (", 1)[0] else None
        host, port = request.rsplit(":", 1)
        host = host.strip("[]")
        assert oracle(spec, host, int(port), resolved) and not oracle(boundary, host, int(port), resolved, ceiling=True), excess.message
        span = plan.source.anchor_span(excess.path)
        written = lines[span.line - 1][span.col - 1 : span.end_col - 1].strip("\"")
        via = excess.message.split("(", 1)[1].split(")", 1)[0]
        assert written == ("allow" if via == "egress.default: allow" else via.removeprefix("through ")), (written, excess.message)


def _effective(policy: Written, via: str) -> Written:
    """What the targets build, not what the entries say: with `via: direct` and any egress at all the
    server gets the host network (bwrap and compose filter nothing), so every request passes."""
    if via == "direct" and (policy.default == "allow" or policy.allow):
        return Written("allow", [], [])
    return policy


@settings(max_examples=150, deadline=None)
@given(st.data(), policies, policies, st.sampled_from(["proxy", "direct"]))
def test_through_whole_specs_a_passing_check_leaves_nothing_the_built_egress_allows_outside(data: st.DataObject, spec: Written, boundary: Written, via: str) -> None:
    """The oracle reads `egress.via` as the targets build it: a spec that passes allows no sampled
    request (by name, address, or name resolving to an address) that the boundary refuses."""
    from mcpspec.api import load_text
    from mcpspec.boundary.check import check

    text = _yaml(spec, False, "fetch").replace("    egress: {", f"    egress: {{via: {via}, ")
    found = [e for e in check(load_text(text, "spec.yaml"), load_text(_yaml(boundary, False, "any-server"), "boundary.yaml")) if e.code == "BX001"]
    built = _effective(spec, via)
    if found:
        return
    for _ in range(30):
        host, port, resolved = data.draw(requests(built if built.allow or built.deny else Written("allow", boundary.allow, boundary.deny), boundary))
        if oracle(built, host, port, resolved):
            assert oracle(boundary, host, port, resolved, ceiling=True), f"check passed, yet the built spec ({via}) allows {host}:{port} (resolving to {resolved}) and the boundary does not"
