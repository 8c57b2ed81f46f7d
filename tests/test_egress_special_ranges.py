"""Every special-purpose range, through a real squid with the generated configuration.

A network namespace made for the test holds one sample address of each refused
range on its own loopback (where the kernel allows it), a listener on [::]:8080
that answers on all of them, and squid. For each sample the test asks squid for
the literal address, the bracketed IPv6 form and a name that squid's hosts_file
maps to it, by GET and by CONNECT, and expects 403. A permissive squid in the
same namespace first shows that each sample the kernel can reach does answer,
so a 403 is the policy and not a dead address. No packet leaves the namespace.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import require_tool
from egress_lab import LISTENER, own_networks_in, squid_running
from mcpspec.addresses import SPECIAL_RANGES, SpecialRange
from mcpspec.api import load_text
from mcpspec.targets.build import build_plan

PORT = 8080
PROXY = 3128
# Allowed destinations: public space right next to refused ranges (past 100.64.0.0/10 and 2001::/23).
PUBLIC_V4 = "100.128.0.7"
PUBLIC_V6 = "2001:200::7"


@dataclass(frozen=True)
class Sample:
    address: str
    what: str
    on_lo: bool = True  # added to the namespace's loopback
    tcp: bool = True  # the kernel connects to it (not multicast or broadcast)


SAMPLES = (
    Sample("0.0.0.0", "this host", on_lo=False),
    Sample("0.1.2.3", "this network"),
    Sample("10.1.2.3", "private 10/8"),
    Sample("100.64.0.7", "shared CGNAT"),
    Sample("100.100.100.200", "Alibaba metadata"),
    Sample("127.0.0.1", "loopback", on_lo=False),
    Sample("127.0.0.2", "loopback /8", on_lo=False),
    Sample("169.254.169.254", "link-local metadata"),
    Sample("169.254.1.7", "link-local"),
    Sample("168.63.129.16", "Azure wireserver"),
    Sample("172.16.0.7", "private 172.16/12"),
    Sample("192.0.0.9", "PCP anycast (IETF protocol assignments)"),
    Sample("192.0.0.192", "Oracle metadata"),
    Sample("192.0.2.7", "TEST-NET-1"),
    Sample("192.88.99.7", "6to4 relay anycast"),
    Sample("192.168.0.7", "private 192.168/16"),
    Sample("198.18.0.7", "benchmarking"),
    Sample("198.51.100.7", "TEST-NET-2"),
    Sample("203.0.113.7", "TEST-NET-3"),
    Sample("224.1.1.1", "multicast", tcp=False),
    Sample("240.0.0.7", "reserved"),
    Sample("255.255.255.255", "limited broadcast", tcp=False),
    Sample("::", "unspecified", on_lo=False),
    Sample("::1", "IPv6 loopback", on_lo=False),
    Sample("::a01:204", "IPv4-compatible"),
    Sample("::ffff:127.0.0.1", "IPv4-mapped loopback", on_lo=False),
    Sample("::ffff:10.1.2.3", "IPv4-mapped private", on_lo=False),
    Sample("::ffff:0:a01:203", "IPv4-translated"),
    Sample("64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254"),
    Sample("64:ff9b:1::7", "local-use NAT64"),
    Sample("100::7", "discard-only"),
    Sample("100:0:0:1::7", "dummy prefix"),
    Sample("2001::7", "Teredo"),
    Sample("2001:2::7", "benchmarking"),
    Sample("2001:db8::7", "documentation"),
    Sample("2002:a9fe:a9fe::1", "6to4 of 169.254.169.254"),
    Sample("3fff::7", "documentation 3fff::/20"),
    Sample("5f00::7", "SRv6 SIDs"),
    Sample("fd00::5", "unique-local"),
    Sample("fd00:ec2::254", "AWS metadata"),
    Sample("fe80::7", "link-local", tcp=False),  # needs a scope id to connect
    Sample("fec0::7", "site-local"),
    Sample("ff05::1", "multicast", on_lo=False, tcp=False),
)
NEVER = {"0.0.0.0", "0.1.2.3", "100.100.100.200", "169.254.169.254", "169.254.1.7", "168.63.129.16", "192.0.0.192", "::",
         "::ffff:0:a01:203", "64:ff9b::a9fe:a9fe", "64:ff9b:1::7", "2001::7", "2001:2::7", "2002:a9fe:a9fe::1", "fd00:ec2::254"}


def _authority(address: str) -> str:
    return f"[{address}]:{PORT}" if ":" in address else f"{address}:{PORT}"


def _name(index: int) -> str:
    return f"sample{index}.test"


# Run inside the namespace: one request per line of stdin, through the proxy; prints the status of each.
CLIENT = textwrap.dedent(
    f"""
    import json, socket, sys
    out = []
    for line in sys.stdin:
        method, authority = line.split()
        request = f"GET http://{{authority}}/ HTTP/1.1" if method == "GET" else f"CONNECT {{authority}} HTTP/1.1"
        with socket.create_connection(("127.0.0.1", {PROXY}), 5) as s:
            s.sendall(f"{{request}}\\r\\nHost: {{authority}}\\r\\nConnection: close\\r\\n\\r\\n".encode())
            s.settimeout(5)
            try:
                head = s.recv(64).decode("latin-1")
            except OSError:
                head = ""
        out.append(int(head.split()[1]) if head.startswith("HTTP/") else 0)
    print(json.dumps(out))
    """
)

# A DNS server for the namespace: answers A and AAAA from a fixed table (TTL 0), nothing else.
DNS = textwrap.dedent(
    """
    import ipaddress, socket, struct, sys
    table = {}
    for entry in sys.argv[1:]:
        name, address = entry.split("=")
        table.setdefault(name, []).append(ipaddress.ip_address(address))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 53))
    while True:
        query, peer = s.recvfrom(512)
        ident, flags, qdcount = struct.unpack("!HHH", query[:6])
        labels, i = [], 12
        while query[i]:
            labels.append(query[i + 1 : i + 1 + query[i]].decode().lower())
            i += 1 + query[i]
        qtype = struct.unpack("!H", query[i + 1 : i + 3])[0]
        question = query[12 : i + 5]
        wanted = 1 if qtype == 1 else 28 if qtype == 28 else 0
        answers = [a for a in table.get(".".join(labels), []) if (a.version == 4 and wanted == 1) or (a.version == 6 and wanted == 28)]
        body = b"".join(struct.pack("!HHHIH", 0xC00C, wanted, 1, 0, len(a.packed)) + a.packed for a in answers)
        rcode = 0 if ".".join(labels) in table else 3
        s.sendto(struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, len(answers), 0, 0) + question + body, peer)
    """
)


class Lab:
    def __init__(self, ip: str, squid: str, namespace: str, base: Path) -> None:
        self.ip, self.squid, self.namespace, self.base = ip, squid, namespace, base
        self.inside = [ip, "netns", "exec", namespace]

    def squid_conf(self, spec_egress: str) -> str:
        """The squid.conf the bwrap target builds for a server with this egress, plus the lines its launcher adds."""
        plan = load_text(f"version: 1\nproject: ranges\nservers:\n  probe:\n    command: [probe]\n    egress: {spec_egress}\n", "ranges.yaml")
        built = build_plan(plan, "bwrap")
        policy = built.files["probe.squid.conf"]
        runtime = [f"http_port 127.0.0.1:{PROXY}", f"pid_filename {self.base}/squid.pid", f"cache_log {self.base}/cache.log",
                   f"hosts_file {self.base}/hosts", "dns_nameservers 127.0.0.1", f"coredump_dir {self.base}", "cache_dir null /tmp",
                   *(f"acl host_addresses dst {network}" for network in self.host_networks()), f"acl proxy_port port {PROXY}"]
        return "\n".join(runtime) + "\n" + policy + f"access_log stdio:{self.base}/access.log mcpspec\n"

    def host_networks(self) -> list[str]:
        """The launcher's ACL of the host's own addresses, read in the namespace, without PUBLIC_V4 and
        PUBLIC_V6: they play far destinations here, on this namespace's loopback only for brevity
        (test_egress_host_addresses.py attacks that ACL with destinations in a namespace of their own)."""
        public = {f"{PUBLIC_V4}/32", f"{PUBLIC_V6}/128"}
        return [network for network in own_networks_in([*self.inside, sys.executable]) if network not in public]

    def statuses(self, conf: str, requests: list[tuple[str, str]]) -> list[int]:
        path = self.base / "squid.conf"
        path.write_text(conf, encoding="utf-8")
        with squid_running(self.inside, self.squid, path):
            lines = "".join(f"{method} {authority}\n" for method, authority in requests)
            done = subprocess.run([*self.inside, sys.executable, "-c", CLIENT], input=lines, capture_output=True, text=True, timeout=300, check=True)
        result: list[int] = json.loads(done.stdout)
        return result


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    ip, squid = require_tool("ip"), require_tool("squid")
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("creating a network namespace needs root (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("creating a network namespace needs root")
    namespace = f"mcpspec-ranges-{os.getpid()}"
    base = Path(tempfile.mkdtemp(prefix="mcpspec-ranges-"))
    base.chmod(0o755)
    proxy_user = pwd.getpwnam("proxy")
    os.chown(base, proxy_user.pw_uid, proxy_user.pw_gid)
    subprocess.run([ip, "netns", "add", namespace], check=True)
    listener = resolver = None
    try:
        inside = [ip, "netns", "exec", namespace]
        subprocess.run([*inside, "ip", "link", "set", "lo", "up"], check=True)
        for address in [*(s.address for s in SAMPLES if s.on_lo), PUBLIC_V4, PUBLIC_V6]:
            prefix = 128 if ":" in address else 32
            subprocess.run([*inside, "ip", "addr", "add", f"{address}/{prefix}", "dev", "lo"], check=True)
        names = [f"{s.address} {_name(i)}\n" for i, s in enumerate(SAMPLES)]
        (base / "hosts").write_text("".join([*names, f"{PUBLIC_V4} public4.test\n", f"{PUBLIC_V6} public6.test\n"]), encoding="utf-8")
        (base / "hosts").chmod(0o644)
        listener = subprocess.Popen([*inside, sys.executable, "-c", LISTENER, "sample", str(PORT)])
        records = [f"{name}={address}" for name, addresses in RECORDS.items() for address in addresses]
        resolver = subprocess.Popen([*inside, sys.executable, "-c", DNS, *records])
        deadline = time.monotonic() + 10
        probe = f"import socket; socket.create_connection(('{PUBLIC_V4}', {PORT}), 1)"
        while subprocess.run([*inside, sys.executable, "-c", probe], capture_output=True).returncode:
            assert time.monotonic() < deadline, "the listener did not start"
            time.sleep(0.1)
        yield Lab(ip, squid, namespace, base)
    finally:
        for process in (listener, resolver):
            if process is not None:
                process.kill()
                process.wait()
        subprocess.run([ip, "netns", "del", namespace], check=False)
        shutil.rmtree(base, ignore_errors=True)


def _requests() -> list[tuple[str, str]]:
    out = []
    for index, sample in enumerate(SAMPLES):
        for authority in (_authority(sample.address), f"{_name(index)}:{PORT}"):
            out += [("GET", authority), ("CONNECT", authority)]
    return out


def _by_sample(statuses: list[int]) -> dict[str, list[int]]:
    return {sample.address: statuses[4 * i : 4 * i + 4] for i, sample in enumerate(SAMPLES)}


PUBLIC = [("GET", f"{PUBLIC_V4}:{PORT}"), ("CONNECT", f"public4.test:{PORT}"), ("GET", f"[{PUBLIC_V6}]:{PORT}"), ("CONNECT", f"public6.test:{PORT}")]


def test_every_sample_answers_through_a_squid_without_policy(lab: Lab) -> None:
    """The control experiment: without the generated rules each reachable sample answers, so the 403s below are the policy."""
    conf = lab.squid_conf("{default: allow, via: proxy}")
    policy_start = conf.index("acl ip_literal")
    permissive = conf[:policy_start] + "http_access allow all\n" + f"access_log stdio:{lab.base}/access.log mcpspec\n"
    got = _by_sample(lab.statuses(permissive, _requests()))
    reached = {address: codes for address, codes in got.items() if codes == [200, 200, 200, 200]}
    assert set(reached) == {s.address for s in SAMPLES if s.tcp}, got


@pytest.mark.parametrize("egress", ["{default: allow, via: proxy}", "ALLOWLIST"], ids=["default-allow", "allowlist"])
def test_squid_refuses_every_sample_literal_bracketed_and_by_name(lab: Lab, egress: str) -> None:
    if egress == "ALLOWLIST":  # every sample's name is listed: only the check after resolution can refuse it
        names = [f'"{_name(i)}:{PORT}"' for i in range(len(SAMPLES))]
        egress = "{allow: [" + ", ".join([*names, f'"public4.test:{PORT}"', f'"public6.test:{PORT}"', f'"{PUBLIC_V4}:{PORT}"', f'"[{PUBLIC_V6}]:{PORT}"']) + "]}"
    got = lab.statuses(lab.squid_conf(egress), _requests() + PUBLIC)
    refused = _by_sample(got[: -len(PUBLIC)])
    assert {address: codes for address, codes in refused.items() if codes != [403] * 4} == {}
    assert got[-len(PUBLIC) :] == [200, 200, 200, 200]


def test_an_allow_entry_covering_everything_reopens_only_the_refused_ranges(lab: Lab) -> None:
    """Address entries win over the refused ranges (a spec may name an internal service), never over the never ones."""
    egress = '{allow: ["0.0.0.0/0", "::/0"]}'
    requests = [(method, _authority(s.address)) for s in SAMPLES if s.tcp for method in ("GET", "CONNECT")]
    got = lab.statuses(lab.squid_conf(egress), requests)
    tcp = [s for s in SAMPLES if s.tcp]
    verdicts = {s.address: got[2 * i : 2 * i + 2] for i, s in enumerate(tcp)}
    assert {a: v for a, v in verdicts.items() if a in NEVER and v != [403, 403]} == {}
    assert {a: v for a, v in verdicts.items() if a not in NEVER and v != [200, 200]} == {}


def test_every_special_range_has_a_sample_and_a_verdict() -> None:
    """The table and the samples stay in step: each refused range is proven by a sample above."""
    import ipaddress

    def covered(entry: SpecialRange) -> bool:
        return any(ipaddress.ip_address(s.address) in entry.network for s in SAMPLES)

    missing = [str(r.network) for r in SPECIAL_RANGES if r.verdict != "reachable" and not covered(r)]
    assert missing == []
    for sample in SAMPLES:
        address = ipaddress.ip_address(sample.address)
        in_never = any(address in r.network for r in SPECIAL_RANGES if r.verdict == "never")
        assert in_never or sample.address not in NEVER or sample.address in {"100.100.100.200", "168.63.129.16", "192.0.0.192", "fd00:ec2::254"}


# Names with several addresses (squid's hosts_file keeps one per name): a refused one among them refuses the name.
RECORDS = {
    "public.multi.test": [PUBLIC_V4, PUBLIC_V6],
    "rebind4.multi.test": [PUBLIC_V4, "127.0.0.1"],
    "rebind6.multi.test": [PUBLIC_V4, "::1"],
    "unspecified.multi.test": [PUBLIC_V4, "::"],
    "metadata.multi.test": ["169.254.169.254", PUBLIC_V4],
}
MULTI = [f"{name}:{PORT}" for name in RECORDS]


@pytest.mark.parametrize("egress", ["{default: allow, via: proxy}", "LISTED"], ids=["default-allow", "allowlist-with-the-address"])
def test_a_name_with_a_refused_address_among_its_addresses_is_refused(lab: Lab, egress: str) -> None:
    """DNS rebinding by answer order: squid checks every address of a name, and an address
    entry of the spec matches only a request that names the address."""
    if egress == "LISTED":
        egress = "{allow: [" + ", ".join([f'"{PUBLIC_V4}:{PORT}"', f'"[{PUBLIC_V6}]:{PORT}"', *(f'"{authority}"' for authority in MULTI)]) + "]}"
    got = lab.statuses(lab.squid_conf(egress), [(method, authority) for authority in MULTI for method in ("GET", "CONNECT")])
    assert got == [200, 200] + [403] * (2 * (len(MULTI) - 1))
