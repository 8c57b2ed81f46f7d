"""Soundness of the check's newer dimensions against independent oracles, with hypothesis:

- egress through the proxy (`via: proxy`): the oracle decides one request as the squid rules of
  mcpspec.targets.egress do (metadata names and never ranges first, then the spec's deny, its
  address entries, the refused ranges, its names, its default); if the check passes, no sampled
  request the proxy lets through is refused by the boundary, and every witness is one it lets
  through and the boundary refuses;
- argument rules: if the check passes, no sampled call is decided more freely by the spec's
  rules (as `mcpspec run` decides it) than by the boundary's.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpspec.addresses import METADATA_HOSTS, NEVER_NETWORKS, REFUSED_NETWORKS
from mcpspec.api import load_text
from mcpspec.boundary import egress, refused
from mcpspec.boundary.check import check
from mcpspec.boundary.tools import decision
from mcpspec.ir.plan import EgressPolicy
from test_boundary_soundness import Written, _matches, oracle, policies

SPECIAL = ["127.0.0.1", "127.9.9.9", "169.254.169.254", "10.1.2.3", "192.168.1.1", "0.0.0.0", "100.100.100.200", "::1", "fe80::1", "fd00:ec2::254",
           "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:8.8.8.8", "8.8.8.8", "2606:4700::1",
           "metadata.google.internal", "host.docker.internal", "203.0.113.7"]
SPECIAL_ENTRIES = ["127.0.0.0/8", "127.0.0.1:8080", "169.254.169.254:80", "10.0.0.0/8:443", "[::1]:8080", "fe80::/10", "[64:ff9b::a9fe:a9fe]:80", "0.0.0.0/0", "::/0"]


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def proxied(policy: Written, host: str, port: int) -> bool:
    """Whether squid lets ``host:port`` through for a `via: proxy` server with ``policy``."""
    address = _address(host)
    if host in METADATA_HOSTS or (address is not None and any(address in n for n in NEVER_NETWORKS if n.version == address.version)):
        return False
    if any(_matches(entry, host, port) for entry in policy.deny):
        return False
    if address is None:
        return oracle(policy, host, port)
    if any(entry.kind == "cidr" and _matches(entry, host, port) for entry in policy.allow):
        return True
    if any(address in n for n in REFUSED_NETWORKS if n.version == address.version):
        return False
    return policy.default == "allow"


def _plan_policy(written: Written) -> EgressPolicy:
    return EgressPolicy(default=written.default, via="proxy", allow=tuple(written.allow), deny=tuple(written.deny))  # type: ignore[arg-type]


with_special = st.builds(
    lambda w, extra, deny: Written(w.default, [*w.allow, *extra], [*w.deny, *deny]),
    policies,
    st.lists(st.sampled_from(SPECIAL_ENTRIES), max_size=2).map(lambda texts: [egress_entry(t) for t in texts]),
    st.lists(st.sampled_from(SPECIAL_ENTRIES), max_size=1).map(lambda texts: [egress_entry(t) for t in texts]),
)


def egress_entry(text: str) -> Any:
    from mcpspec.spec.values import parse_destination

    return parse_destination(text)


@st.composite
def _inside(draw: st.DrawFn, policy: Written) -> tuple[str, int]:
    """A request to one of the policy's own entries (a name below a wildcard, an address of a
    network), on its port or any."""
    port = draw(st.sampled_from([1, 22, 80, 443, 8080, 65535]))
    if not policy.allow + policy.deny:
        return draw(st.sampled_from(SPECIAL)), port
    entry = draw(st.sampled_from(policy.allow + policy.deny))
    port = entry.port if entry.port is not None and draw(st.booleans()) else port
    if entry.kind == "domain":
        return entry.host, port
    if entry.kind == "wildcard":
        return draw(st.sampled_from(["x", "a.b"])) + entry.host[1:], port
    return str(entry.network.network_address + draw(st.integers(0, entry.network.num_addresses - 1))), port


@settings(max_examples=300, deadline=None)
@given(st.data(), with_special, policies)
def test_through_the_proxy_a_passing_check_leaves_no_sampled_request_outside(data: st.DataObject, spec: Written, boundary: Written) -> None:
    limit = egress.policy(boundary.default, boundary.allow, boundary.deny)
    found = refused.leaks(_plan_policy(spec), limit, {})
    for leak in found:
        assert proxied(spec, leak.host, leak.port), f"the witness {leak.request} is refused by the proxy"
        resolved = getattr(leak, "resolved", None)  # a name the boundary refuses by the address it resolves to
        if resolved is None:
            assert not oracle(boundary, leak.host, leak.port), f"the witness {leak.request} is allowed by the boundary"
        else:
            # Squid refuses a name resolving into the special ranges; Cilium's toFQDNs (k8s --egress cilium) lets
            # it reach what the spec lists by address, on any port, which the check assumes (it may over-report).
            address = ipaddress.ip_address(resolved)
            by_cilium = any(
                span.family == address.version and span.low <= int(address) <= span.high
                for e in spec.allow if e.kind == "cidr" for span in egress.address_spans(e, False)
            )  # a network that holds the IPv4-mapped block lists every IPv4 address (the check reads it so)
            assert by_cilium or proxied(Written("allow", [], [e for e in spec.deny if e.kind == "cidr"]), resolved, leak.port), f"the proxy refuses {leak.request}"
            assert any(_matches(e, resolved, leak.port) for e in boundary.deny if e.kind == "cidr"), f"the boundary does not refuse {leak.request}"
    if found:
        return
    for _ in range(20):
        host, port = data.draw(st.one_of(_inside(spec), st.tuples(st.sampled_from(SPECIAL), st.sampled_from([80, 443, 8080, 1]))))
        if proxied(spec, host, port):
            assert oracle(boundary, host, port), f"check passed, yet the proxy lets {host}:{port} through and the boundary does not"


def test_an_extra_inside_the_refused_ranges_is_no_excess_but_a_listed_one_is() -> None:
    boundary = egress.policy("allow", [], [egress_entry("10.0.0.0/8"), egress_entry("127.0.0.0/8"), egress_entry("169.254.0.0/16")])
    assert refused.leaks(_plan_policy(Written("allow", [], [])), boundary, {}) == []
    listed = refused.leaks(_plan_policy(Written("allow", [egress_entry("127.0.0.1:8080")], [])), boundary, {})
    # the listed address, and a name resolving to it (Cilium lets a name reach what the spec lists by address)
    assert sorted(leak.request for leak in listed) == ["127.0.0.1:8080", "unlisted.invalid:1 resolving to 127.0.0.1"]
    direct = EgressPolicy(default="allow", via="direct", allow=(), deny=())  # type: ignore[arg-type]
    assert [leak.request for leak in refused.leaks(direct, boundary, {})] == ["10.0.0.0:1"]
    # names contained, addresses not: the open part of a default allow gives the witness
    no_v4 = egress.policy("allow", [], [egress_entry("0.0.0.0/0")])
    (leak,) = refused.leaks(_plan_policy(Written("allow", [], [])), no_v4, {})
    address = getattr(leak, "resolved", None) or leak.host  # by name resolving to it, where the check reads a deny so
    assert (address, leak.port, leak.entry) == ("1.0.0.0", 1, None) and proxied(Written("allow", [], []), address, leak.port)


# --- argument rules ---

CONDITIONS = [
    '{arg: path, glob: "/etc/**"}', '{arg: path, glob: "/workspace/output/**"}', "{arg: path, prefix: /workspace}", "{arg: path, prefix: /workspace, path: true}",
    '{arg: path, glob: "/ETC/**", case: insensitive}', '{arg: path, glob: "/workspace/*/a"}', "{arg: path, equals: /etc/passwd, path: true}",
    "{arg: branch, equals: main}", "{arg: branch, equals: MAIN, case: insensitive}", "{arg: branch, equals: dev}",
    "{arg: force, equals: true}", "{arg: count, range: {min: 1, max: 10}}",
    '{not: {arg: branch, equals: main}}', '{any: [{arg: force, equals: true}, {arg: path, glob: "/etc/**"}]}',
]
ACTIONS = ["allow", "approve", "refuse"]
rule_lists = st.lists(st.tuples(st.sampled_from(CONDITIONS), st.sampled_from(ACTIONS)), max_size=4)
otherwise = st.sampled_from([None, *ACTIONS])
approvals = st.sampled_from([None, "always", "per-session", "never"])
ARGUMENTS = st.fixed_dictionaries({}, optional={
    "path": st.sampled_from(["/etc/passwd", "/etc", "/workspace/output/a", "/workspace/../etc/x", "/workspacex", "/workspace", "relative", "/ETC/passwd",
                             "/Workspace/Output/a", "/workspace/output/%2e%2e/%2e%2e/etc/passwd", "%2Fetc%2Fpasswd", "/workspace\\..\\etc", "／etc／passwd",
                             "/workspace/output/../../etc/passwd", "/workspace/OUTPUT/x", "/etc/../workspace/output/a"]),
    "branch": st.sampled_from(["main", "dev", "MAIN", "", "ｍａｉｎ", "Main"]),
    "force": st.sampled_from([True, False, "true", 1]),
    "count": st.sampled_from([0, 1, 5, 10, 11, "5", 2.5]),
})


def _tool_yaml(rules: list[tuple[str, str]], fallback: str | None, approval: str | None) -> str:
    lines = ["      t:", "        effects: [reads_private]"]
    if approval is not None:
        lines.append(f"        approval: {approval}")
    if rules:
        lines.append("        when:")
        lines += [f"          - {{if: {condition}, then: {action}}}" for condition, action in rules]
        if fallback is not None:
            lines.append(f"        otherwise: {fallback}")
    return "\n".join(lines)


def _plan(server: str, tool: str) -> Any:
    return load_text(f"version: 1\nproject: p\nservers:\n  {server}:\n    command: [x]\n    tools:\n{tool}\n", f"{server}.yaml")


@settings(max_examples=500, deadline=None)
@given(st.data(), rule_lists, otherwise, approvals, rule_lists.filter(bool), otherwise, approvals)
def test_a_passing_check_leaves_no_sampled_call_decided_more_freely(
    data: st.DataObject, mine: list[tuple[str, str]], mine_else: str | None, mine_approval: str | None,
    theirs: list[tuple[str, str]], theirs_else: str | None, theirs_approval: str | None,
) -> None:
    spec = _plan("s", _tool_yaml(mine, mine_else, mine_approval))
    boundary = _plan("any-server", _tool_yaml(theirs, theirs_else, theirs_approval))
    found = [e for e in check(spec, boundary) if e.code == "BX012"]
    tool, own = spec.servers["s"].tools["t"], boundary.servers["any-server"].tools["t"]
    if found:
        return
    for _ in range(25):
        arguments = data.draw(ARGUMENTS)
        ours, limit = decision(spec, tool, arguments), decision(boundary, own, arguments)
        assert ours.level <= limit.level, f"check passed, yet {arguments} is {ours.label} in the spec and {limit.label} in the boundary"


@settings(max_examples=200, deadline=None)
@given(rule_lists, otherwise, approvals)
def test_every_tool_is_within_itself(rules: list[tuple[str, str]], fallback: str | None, approval: str | None) -> None:
    tool = _tool_yaml(rules, fallback, approval)
    assert [e.message for e in check(_plan("s", tool), _plan("any-server", tool)) if e.code == "BX012"] == []


def _excesses(mine: list[tuple[str, str]], theirs: list[tuple[str, str]]) -> list[str]:
    spec, boundary = _plan("s", _tool_yaml(mine, "refuse", None)), _plan("any-server", _tool_yaml(theirs, None, None))
    return [e.message for e in check(spec, boundary) if e.code == "BX012"]


def test_an_allow_rule_apart_from_the_boundarys_refusal_is_contained_and_one_that_meets_it_is_not() -> None:
    etc = ('{arg: path, glob: "/etc/**"}', "refuse")
    assert _excesses([('{arg: path, glob: "/workspace/output/**"}', "allow")], [etc]) == []
    assert _excesses([("{arg: branch, equals: dev}", "allow")], [("{arg: branch, equals: main}", "refuse")]) == []
    # letter case: an insensitive refusal of /ETC/** meets an allow of /etc/**, and MAIN meets main
    (found,) = _excesses([('{arg: path, glob: "/etc/**"}', "allow")], [('{arg: path, glob: "/ETC/**", case: insensitive}', "refuse")])
    assert '{"path": "/etc/x"}' in found, found
    assert _excesses([("{arg: branch, equals: main}", "allow")], [("{arg: branch, equals: MAIN, case: insensitive}", "refuse")]) != []
    # a string prefix is not a path: /workspace/../etc/passwd starts with /workspace
    assert _excesses([("{arg: path, prefix: /workspace}", "allow")], [etc]) != []
