"""The egress proxy attacked for real (issue 25): squid answering for itself, and the host's own addresses.

Squid runs with the configuration the bwrap target generates, plus the lines its launcher
adds, in a network namespace made for the test that plays the host (egress_lab.py): its
own "public" addresses sit on its link, a listener there plays a host service, and the far
end of the link (another namespace) plays an allowed destination. Each attack is first shown
to work against the same squid without the guarding rules (the control), so a refusal
below is the policy. The bwrap launcher is then attacked from inside its sandbox, started
in the same namespace. No packet leaves the two namespaces.
"""

from __future__ import annotations

import ipaddress
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from egress_lab import ANYIP_V4, ANYIP_V6, FAR_V4, FAR_V6, HOST_V4, HOST_V6, LINK_V4, LINK_V6, PORT, PROXY, PROXY_CLIENT, Lab, make_lab, status
from mcpspec.api import load_text
from mcpspec.targets.build import build_plan
from mcpspec.targets.egress import SQUID_ONLY_WEB

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import Sandbox, call_tools, root_sandbox

PRIVATE_DENIED = "{default: allow, deny: ['@private', '@metadata']}"
# What squid's manager and error pages would give away: its build, its state and log paths.
LEAKS = ("Squid Object Cache", "Build Info", "squid.pid", "cache.log", "access.log", "/tmp/", "/var/", "/run/", "/etc/")


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    item = make_lab()
    yield item
    item.close()


def _rules(egress: str) -> str:
    plan = load_text(f"version: 1\nproject: lab\nservers:\n  probe:\n    command: [probe]\n    egress: {egress}\n", "lab.yaml")
    return build_plan(plan, "bwrap").files["probe.squid.conf"]


def _unguarded(rules: str) -> str:
    """The rules as they were before issue 25: no rule 0, no refusal of the host's own addresses."""
    dropped = {*SQUID_ONLY_WEB, "http_access deny host_addresses", "http_access deny proxy_port host_addresses", "cachemgr_passwd disable all",
               "global_internal_static off"}
    return "".join(line + "\n" for line in rules.splitlines() if line not in dropped)


def _request(line: str, host: str = f"far.test:{PORT}", extra: str = "") -> str:
    return f"{line} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"


FAR = [_request(f"GET http://far.test:{PORT}/"), _request(f"GET http://[{FAR_V6}]:{PORT}/", f"[{FAR_V6}]:{PORT}"), _request(f"CONNECT far.test:{PORT}")]
SELF = f"127.0.0.1:{PROXY}"
# What squid would answer itself, or fetch by another protocol: absolute and origin form, on the
# allowed host, on squid's own address and port, on its visible host name.
ITSELF = [
    _request(f"GET cache_object://far.test:{PORT}/info"),
    _request(f"GET cache_object://{SELF}/info", SELF),
    _request("GET cache_object://mcpspec-egress/config", "mcpspec-egress"),
    _request(f"GET http://{SELF}/squid-internal-mgr/info", SELF),
    _request(f"GET http://far.test:{PORT}/squid-internal-mgr/info"),
    _request(f"GET http://mcpspec-egress:{PROXY}/squid-internal-mgr/menu", f"mcpspec-egress:{PROXY}"),
    _request("GET /squid-internal-mgr/info", SELF),
    _request("GET /squid-internal-static/icons/SN.png", SELF),
    _request(f"GET http://far.test:{PORT}/squid-internal-static/icons/SN.png"),
    _request(f"TRACE http://far.test:{PORT}/", extra="Max-Forwards: 0\r\n"),
    _request(f"GET ftp://far.test:{PORT}/"),
    _request(f"GET gopher://far.test:{PORT}/"),
    _request(f"GET whois://far.test:{PORT}/"),
    _request(f"GET wais://far.test:{PORT}/"),
    _request("GET urn:x-mcpspec:probe"),
]


def _leaks(answer: str, markers: tuple[str, ...]) -> list[str]:
    return [marker for marker in markers if marker in answer.partition("\r\n\r\n")[2]]


def _not_refused(verdicts: list[tuple[int, list[str]]]) -> dict[str, str]:
    """Each (status, leaked markers) of an ITSELF request that is not a refusal by squid, or that leaked."""
    bad = {}
    for request, (code, leaked) in zip(ITSELF, verdicts, strict=True):
        # 403 from the rules; gopher is refused by squid 5.7 itself as unsupported (501) before any rule.
        if code not in (403, 501) or leaked:
            bad[request.split("\r\n")[0]] = f"{code} {leaked}"
    return bad


def _allowed_in_log(lab: Lab) -> list[str]:
    """Access-log lines the bwrap audit records as allowed (not NONE_*, not DENIED)."""
    return [line for line in lab.access_log() if len(line.split()) >= 5 and not line.split()[1].startswith("NONE") and "DENIED" not in line.split()[1]]


def test_control_an_unguarded_squid_answers_its_manager_and_reaches_the_host(lab: Lab) -> None:
    """Without rule 0 and the host ACL, the attacks work on this squid: the refusals below are the policy."""
    answers = lab.answers(lab.squid_conf(_unguarded(_rules(PRIVATE_DENIED)), ["0.0.0.0/32"]),
                          [ITSELF[0], _request(f"GET http://{HOST_V4}:{PORT}/"), _request(f"GET http://own.test:{PORT}/")])
    assert status(answers[0]) == 200 and "Squid Object Cache" in answers[0]
    assert [status(a) for a in answers[1:]] == [200, 200] and all("host-service" in a for a in answers[1:])


@pytest.mark.parametrize("egress", [PRIVATE_DENIED, '{allow: ["far.test:8080", "[2001:200::7]:8080"]}'], ids=["default-allow", "allowlist"])
def test_squid_answers_nothing_itself_and_passes_only_http_and_connect(lab: Lab, egress: str) -> None:
    """cache_object://, squid's manager and internal pages (on its own address, port and name and on
    the allowed host, absolute and origin form), TRACE, ftp, gopher, whois, wais and urn: all refused,
    nothing of squid's host in any answer, nothing recorded as allowed; http and CONNECT still pass."""
    answers = lab.answers(lab.squid_conf(_rules(egress), lab.own_networks()), [*FAR, *ITSELF])
    assert [status(a) for a in answers[: len(FAR)]] == [200, 200, 200]
    assert "far-service" in answers[0] and "far-service" in answers[1]
    markers = (*LEAKS, str(lab.base), "far-service")
    assert _not_refused([(status(a), _leaks(a, markers)) for a in answers[len(FAR) :]]) == {}
    allowed = _allowed_in_log(lab)
    assert len(allowed) == len(FAR), allowed


def test_connect_to_a_port_the_allowlist_does_not_name_is_refused(lab: Lab) -> None:
    answers = lab.answers(lab.squid_conf(_rules('{allow: ["far.test:8080"]}'), lab.own_networks()),
                          [_request(f"CONNECT far.test:{PORT}"), _request("CONNECT far.test:25"), _request("CONNECT far.test:443"), _request(f"CONNECT {FAR_V4}:{PORT}")])
    assert [status(a) for a in answers] == [200, 403, 403, 403]


# The host's own addresses, each way a request can name them.
OWN = [
    f"{HOST_V4}:{PORT}", f"[{HOST_V6}]:{PORT}", f"own.test:{PORT}", f"own6.test:{PORT}", f"[::ffff:{HOST_V4}]:{PORT}",
    f"{LINK_V4}:{PORT}", f"[{LINK_V6}]:{PORT}", f"{ANYIP_V4}.5:{PORT}", f"[{ANYIP_V6}5]:{PORT}",
]


def _own_requests() -> list[str]:
    return [r for authority in OWN for r in (_request(f"GET http://{authority}/", authority), _request(f"CONNECT {authority}", authority))]


def test_control_the_hosts_own_addresses_answer_through_a_squid_without_the_host_acl(lab: Lab) -> None:
    """Before the fix: an ACL without the host's addresses lets each of them reach the host's service."""
    answers = lab.answers(lab.squid_conf(_rules(PRIVATE_DENIED), ["0.0.0.0/32"]), _own_requests())
    assert [status(a) for a in answers] == [200] * len(answers)
    assert all("host-service" in a for a in answers[::2])


ALLOW_OWN_NAMES = '{allow: ["far.test:8080", "own.test:8080", "own6.test:8080", "' + f"[{FAR_V6}]:{PORT}" + '"]}'


@pytest.mark.parametrize("egress", [PRIVATE_DENIED, "{default: allow}", ALLOW_OWN_NAMES], ids=["deny-private", "default-allow", "allowlist-naming-them"])
def test_the_hosts_own_addresses_are_refused_literal_bracketed_mapped_and_by_name(lab: Lab, egress: str) -> None:
    """The launcher's ACL of the host's own addresses (read in the namespace by its reader) refuses
    each of them, by GET and CONNECT, while the far host stays reachable."""
    answers = lab.answers(lab.squid_conf(_rules(egress), lab.own_networks()), [*FAR, *_own_requests()])
    assert [status(a) for a in answers[: len(FAR)]] == [200, 200, 200]
    refused = {r.split("\r\n")[0]: status(a) for r, a in zip(_own_requests(), answers[len(FAR) :], strict=True) if status(a) != 403 or "host-service" in a}
    assert refused == {}


def test_the_reader_finds_every_address_and_local_range_of_the_namespace(lab: Lab) -> None:
    networks = [ipaddress.ip_network(n) for n in lab.own_networks()]
    for address in (HOST_V4, HOST_V6, LINK_V4, LINK_V6, "127.0.0.1", "127.3.4.5", "::1", "0.0.0.0", "::", f"{ANYIP_V4}.200", f"{ANYIP_V6}ffff"):
        assert any(ipaddress.ip_address(address) in n for n in networks), address
    for address in (FAR_V4, FAR_V6, "100.128.0.2", "8.8.8.8"):
        assert not any(ipaddress.ip_address(address) in n for n in networks), address


# -- the bwrap launcher, started in the lab's host namespace and attacked from inside its sandbox

@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = root_sandbox()
    yield box
    box.cleanup()


def test_bwrap_launcher_refuses_squid_itself_and_the_hosts_own_addresses(lab: Lab, sandbox: Sandbox) -> None:
    audit = sandbox.base / "audit-proxy.jsonl"
    spec = sandbox.spec("proxy", f"    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    logging: {{audit: true, sink: {audit}}}\n    egress: {PRIVATE_DENIED}")
    launcher = sandbox.build(spec, accept=("NW002",))  # default allow with a private-reading tool, on purpose
    wrapper = sandbox.base / "in-lab.sh"
    wrapper.write_text(f"#!/bin/sh\nexec {' '.join(lab.enter())} {launcher}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    markers = [*LEAKS, str(lab.base), "far-service", "mcpspec-probe-proxy."]  # the last: the launcher's state directory
    urls = [f"http://far.test:{PORT}/", f"http://{HOST_V4}:{PORT}/", f"http://[{HOST_V6}]:{PORT}/", f"http://own.test:{PORT}/", f"http://own6.test:{PORT}/"]
    got = call_tools(wrapper, [*(("http_get", {"url": url}) for url in urls), ("spawn", {"argv": ["/usr/bin/python3", "-c", PROXY_CLIENT, json.dumps(ITSELF), json.dumps(markers)]})],
                     {"MCPSPEC_RUN_ID": "proxy", "MCPSPEC_EGRESS_HOSTS_FILE": str(lab.base / "hosts")})
    assert got[0]["ok"] is True and got[0]["status"] == 200 and got[0]["body"] == "far-service"
    assert [g["status"] for g in got[1:5]] == [403] * 4
    raw = got[5]
    assert raw["status"] == 0, raw
    assert _not_refused([(code, leaked) for code, leaked in json.loads(raw["stdout"])]) == {}
    record = json.loads(audit.read_text(encoding="utf-8").splitlines()[-1])
    allowed = [(e["host"], e["port"]) for e in record["egress_log"] if e["result"] == "allowed"]
    assert allowed == [("far.test", PORT)], record["egress_log"]
    refused = {e["host"] for e in record["egress_log"] if e["result"] == "refused"}
    assert {HOST_V4, "own.test", "own6.test", "far.test", "127.0.0.1"} <= refused
    schemes = {e["scheme"] for e in record["egress_log"] if e["result"] == "refused"}
    assert {"cache_object", "ftp", "whois", "wais", "urn", "http"} <= schemes, schemes  # the audit names what was tried


def test_a_request_to_squids_own_port_is_refused_even_where_an_address_entry_covers_it(lab: Lab) -> None:
    """An address entry covering loopback and the host's addresses on every port would otherwise
    let a request through to squid itself (squid forwards it to its own port)."""
    egress = f'{{allow: ["127.0.0.0/8", "{HOST_V4}/32", "{HOST_V6}/128", "far.test:{PORT}"]}}'
    selves = [f"127.0.0.1:{PROXY}", f"{HOST_V4}:{PROXY}", f"[{HOST_V6}]:{PROXY}"]
    requests = [_request(f"GET http://{HOST_V4}:{PORT}/", f"{HOST_V4}:{PORT}"),
                *(r for authority in selves for r in (_request(f"GET http://{authority}/", authority), _request(f"CONNECT {authority}", authority)))]
    answers = lab.answers(lab.squid_conf(_rules(egress), lab.own_networks()), requests)
    assert status(answers[0]) == 200 and "host-service" in answers[0]  # the entry opens the host's service
    assert [status(a) for a in answers[1:]] == [403] * (len(answers) - 1)


def test_an_address_entry_naming_a_hosts_own_address_opens_it_unless_deny_holds_loopback(lab: Lab) -> None:
    """Like 127.0.0.1, a host address the spec lists as an address entry is reachable by that literal
    (its name still is not); with @private denied as well, the deny wins."""
    requests = [_request(f"GET http://{HOST_V4}:{PORT}/", f"{HOST_V4}:{PORT}"), _request(f"GET http://own.test:{PORT}/", f"own.test:{PORT}")]
    listed = lab.answers(lab.squid_conf(_rules(f'{{allow: ["{HOST_V4}:{PORT}"]}}'), lab.own_networks()), requests)
    assert [status(a) for a in listed] == [200, 403] and "host-service" in listed[0]
    denied = lab.answers(lab.squid_conf(_rules(f'{{allow: ["{HOST_V4}:{PORT}"], deny: ["@private"]}}'), lab.own_networks()), requests)
    assert [status(a) for a in denied] == [403, 403]


FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     |-- 198.51.100.0
        /24 link UNICAST
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     |-- 198.51.100.7
        /32 host LOCAL
     |-- 203.0.113.0
        /24 host LOCAL
     |-- 198.51.100.255
        /32 link BROADCAST
"""
IF_INET6 = "00000000000000000000000000000001 01 80 10 80       lo\n20010db8000000000000000000000007 02 40 00 80     eth0\n"
IPV6_ROUTE = (
    "20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n"
    "20010db8000100000000000000000000 30 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000001 00000000 80200001       lo\n"
)


def test_the_reader_takes_local_addresses_and_local_routes_and_nothing_routed() -> None:
    from mcpspec.targets.own_addresses import own_networks_from

    got = own_networks_from(FIB_TRIE, IF_INET6, IPV6_ROUTE)
    assert got == ["0.0.0.0/32", "127.0.0.0/8", "198.51.100.7/32", "203.0.113.0/24", "::/127", "2001:db8::7/128", "2001:db8:1::/48"]


def test_the_systemd_proxy_conf_reads_back_as_narrow_as_without_its_host_address_file() -> None:
    """The ACL file (unknown at build time) neither widens an allow nor counts as a named deny."""
    from mcpspec.targets.squid_reader import read_squid

    plan = load_text('version: 1\nproject: lab\nservers:\n  probe:\n    command: [probe]\n    egress: {allow: ["far.test:8080"]}\n', "lab.yaml")
    conf = build_plan(plan, "systemd").files["probe.squid.conf"]
    assert 'acl host_addresses dst "/run/mcp-lab_probe_squid/host-addresses"' in conf
    without = "".join(line + "\n" for line in conf.splitlines() if "host_addresses" not in line)
    assert read_squid(conf) == read_squid(without)
    assert read_squid(conf).default == "deny"
