"""The compose target's file, run for real with podman-compose, and attacked from inside by the probe server.

The image is a Debian rootfs (python3 and squid) built by mmdebstrap and imported once under a
tag derived from what it holds; the spec pins it by the digest podman gives it. The `mcp` SDK
and the probe are bind-mounted read-only (declared mounts of the spec). The MCP client talks
to the probe through `podman-compose run -T`, the command an agent would use.

Network: the egress proxy's outer network is created by the test before compose runs, as an
`internal` network with its own subnet: the only destination on it is a test container at
`allowed.test`, and no packet can leave it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import require_tool
from egress_lab import PROXY_CLIENT
from mcpspec.api import load_text
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import build_plan
from mcpspec.targets.compose.envsecrets import WRAPPER_FILE
from podman_images import Recipe, pinned, podman_env

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import call_tools, copy_mcp_closure, sandbox_python_matches

IMAGE = Recipe("mcpspec-compose-test", ("python3", "squid", "socat"))
PROBE = Path(__file__).parent / "probe" / "probe_server.py"
NET_PROBE = Path(__file__).parent / "probe" / "net_probe.py"
SYSCALL_PROBE = Path(__file__).parent / "probe" / "syscall_probe.py"
# The test host's network: internal (no packet leaves it) and in public address space, because the
# proxy refuses private ranges by default. The third octet is drawn per run and retried when a
# subnet is taken (by the host, or by a network an interrupted run left behind).
SUBNET_PREFIX = "44.1"
TOKEN = "file-secret-7e1f0a"
ENV_TOKEN = "env-secret-3b9c27"
# The variable the `gh` secret is read from (provider: env): set only in the environment of the compose wrapper.
ENV_SOURCE = "MCPSPEC_TEST_GH"

SPEC = """\
version: 1
project: creal
workspace:
  root: /srv/creal
  dirs:
    output: {{mode: rw}}
    input: {{mode: ro}}
secrets:
  token: {{provider: file, ref: {base}/token}}
  gh: {{provider: env, ref: MCPSPEC_TEST_GH}}
defaults:
  runtime: {{user: 65532, pids: 32, memory: 256Mi}}
  env: {{set: {{PYTHONPATH: /opt/site}}}}
servers:
  probe:
    image: {image}
    command: [/usr/bin/python3, /opt/probe/probe_server.py]
    env: {{set: {{PYTHONPATH: /opt/site, MODE: "a $HOME b"}}}}
    mounts:
      - {{from: {base}/site, to: /opt/site}}
      - {{from: {base}/probe, to: /opt/probe}}
      - {{from: workspace.output, to: /out}}
      - {{from: workspace.input, to: /in}}
    secrets:
      - {{use: token, as: {{file: /run/secrets/token}}}}
      - {{use: gh, as: {{env: GH_TOKEN}}}}
    lifecycle: {{max_lifetime: 1h}}
  fetch:
    image: {image}
    command: [/usr/bin/python3, /opt/probe/probe_server.py]
    mounts:
      - {{from: {base}/site, to: /opt/site}}
      - {{from: {base}/probe, to: /opt/probe}}
    egress: {{allow: ["allowed.test:80"]}}
  brief:
    image: {image}
    command: [/usr/bin/python3, /opt/probe/probe_server.py]
    mounts:
      - {{from: {base}/site, to: /opt/site}}
      - {{from: {base}/probe, to: /opt/probe}}
    lifecycle: {{max_lifetime: 4s}}
  web:
    image: {image}
    command: [/usr/bin/python3, /opt/probe/net_probe.py, serve, "{port}"]
    # mcpspec: ignore[TS002] reason: the test's own probe, reached only by the test through 127.0.0.1
    transport: {{type: http, port: {port}}}
    mounts:
      - {{from: {base}/probe, to: /opt/probe}}
"""


def _run(*command: str, check: bool = True, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env or podman_env(), check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


class Stack:
    """One run of the generated compose file: its own project name, run directory and files."""

    def __init__(self, podman: str, compose: str, base: Path, files: dict[str, str]) -> None:
        self.podman, self.compose, self.base = podman, compose, base
        self.project = f"creal{uuid.uuid4().hex[:8]}"
        self.target_ip = ""
        self.web_port = 0
        self.image = ""
        self.dir = base / "build"
        self.dir.mkdir()
        for name, text in files.items():
            (self.dir / name).write_text(text, encoding="utf-8")
        (self.dir / WRAPPER_FILE).chmod(0o755)
        self.run_dir = base / "run"
        for sub in ("output", "input"):
            (self.run_dir / sub).mkdir(parents=True)
            (self.run_dir / sub).chmod(0o777)
        (self.run_dir / "input" / "data.txt").write_text("input\n")

    def env(self) -> dict[str, str]:
        return {**podman_env(), "MCPSPEC_RUN_DIR": str(self.run_dir), "COMPOSE_PROJECT_DIR": str(self.dir), ENV_SOURCE: ENV_TOKEN}

    def args(self, *rest: str) -> list[str]:
        """podman-compose with its arguments, through the build's wrapper (it writes the env-provided secrets' files)."""
        return [str(self.dir / WRAPPER_FILE), self.compose, "-p", self.project, "-f", str(self.dir / "compose.yaml"), *rest]

    def up(self, *services: str) -> None:
        for service in services:
            _run(*self.args("up", "-d", "--no-deps", service), env=self.env(), timeout=180)

    def call(self, service: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        launcher = self.base / f"{service}.sh"
        words = " ".join(f"'{w}'" for w in self.args("run", "--rm", "-T", service))
        launcher.write_text(f"#!/bin/sh\nexec {words} 2>>{self.base}/compose-stderr.log\n")
        launcher.chmod(0o755)
        passed = ("CONTAINERS_CONF", "MCPSPEC_RUN_DIR", "COMPOSE_PROJECT_DIR", "HOME", "PATH", ENV_SOURCE)
        return call_tools(launcher, calls, env={k: v for k, v in self.env().items() if k in passed}, timeout=120)

    def down(self) -> None:
        _run(*self.args("down", "-v", "-t", "0"), env=self.env(), check=False, timeout=180)


def _create_internal_network(podman: str, name: str) -> str:
    """Create `name` as an internal network on a free /24 and return the test host's address on it."""
    taken = []
    for third in random.sample(range(2, 255), 12):
        subnet = f"{SUBNET_PREFIX}.{third}.0/24"
        done = _run(podman, "network", "create", "--internal", "--subnet", subnet, name, check=False)
        if done.returncode == 0:
            return f"{SUBNET_PREFIX}.{third}.10"
        if not ("subnet" in done.stderr and "already used" in done.stderr):
            raise AssertionError(f"podman network create {subnet} {name} failed:\n{done.stderr[-3000:]}")
        taken.append(subnet)
    raise AssertionError(f"no free subnet for the test network; taken: {taken}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class HostService:
    """A service of the test machine listening on every address (:: with IPv4 mapped, like 0.0.0.0): records who connects."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("::", 0))
        self.sock.listen(64)
        self.port: int = self.sock.getsockname()[1]
        self.peers: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.peers.append(str(peer[0]))
            conn.close()

    def close(self) -> None:
        self.sock.close()


def host_addresses(podman: str) -> list[str]:
    """Every address of this machine a container could aim at: each podman network's gateways, the
    link-local addresses of their bridges (as seen through a container's eth0), and the machine's own
    global addresses. All of them are the test machine's: no packet sent to them leaves it."""
    addresses: list[str] = []
    names = _run(podman, "network", "ls", "--format", "{{.Name}}").stdout.split()
    for network in json.loads(_run(podman, "network", "inspect", *names).stdout):
        addresses += [subnet["gateway"] for subnet in network.get("subnets") or [] if subnet.get("gateway")]
        bridge = network.get("network_interface")
        shown = subprocess.run(["ip", "-j", "-6", "addr", "show", "dev", bridge], capture_output=True, text=True, check=False) if bridge else None
        if shown is not None and shown.returncode == 0 and shown.stdout.strip():
            addresses += [f"{a['local']}%eth0" for link in json.loads(shown.stdout) for a in link.get("addr_info", []) if a.get("scope") == "link"]
    for link in json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout):
        addresses += [a["local"] for a in link.get("addr_info", []) if a.get("scope") == "global"]
    return sorted(set(addresses))


def compose_tools() -> tuple[str, str, str]:
    """podman, podman-compose and the pinned test image; skips when the image's python cannot load the SDK."""
    podman = require_tool("podman")
    compose = require_tool("podman-compose")
    if not sandbox_python_matches():
        pytest.skip("the SDK's compiled dependencies need the image's python3 to be this python's minor version")
    image = pinned(IMAGE)
    return podman, compose, image


def probe_base(prefix: str) -> Path:
    """A directory under /tmp holding the `mcp` SDK (site/) and the probe server (probe/), readable by the sandbox's user."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    base.chmod(0o755)
    copy_mcp_closure(base / "site")
    (base / "probe").mkdir()
    shutil.copy(PROBE, base / "probe" / "probe_server.py")
    shutil.copy(NET_PROBE, base / "probe" / "net_probe.py")
    shutil.copy(SYSCALL_PROBE, base / "probe" / "syscall_probe.py")
    for path in (base / "site", base / "probe"):
        for sub in [path, *path.rglob("*")]:
            sub.chmod(0o755 if sub.is_dir() else 0o644)
    return base


def start_test_host(podman: str, image: str, name: str, network: str, address: str) -> None:
    """The only destination on the proxy's outer network: `allowed.test`, answering 'reached' on port 80."""
    serve = "import http.server as h\nclass H(h.BaseHTTPRequestHandler):\n def do_GET(s):\n  s.send_response(200); s.end_headers(); s.wfile.write(b'reached')\nh.HTTPServer(('0.0.0.0', 80), H).serve_forever()"
    _run(podman, "run", "-d", "--name", name, "--network", f"{network}:ip={address},alias=allowed.test", image, "/usr/bin/python3", "-c", serve)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    podman, compose, image = compose_tools()
    base = probe_base("mcpspec-compose-")
    (base / "token").write_text(TOKEN + "\n")
    web_port = _free_port()
    plan = load_text(SPEC.format(image=image, base=base, port=web_port), "mcp-sandbox.yaml")
    build = build_plan(plan, "compose", options=BuildOptions(proxy_image=image))
    assert not build.blocked, [r.message for r in build.active]
    box = Stack(podman, compose, base, {k: v for k, v in build.files.items() if not k.startswith(".")})
    box.web_port, box.image = web_port, image
    # The proxy's outer network, made before compose so compose uses it: internal, own subnet, one test host on it.
    outer = f"{box.project}_fetch_out"
    box.target_ip = _create_internal_network(podman, outer)
    target = f"{box.project}-allowed"
    try:
        start_test_host(podman, image, target, outer, box.target_ip)
        yield box
    finally:
        box.down()
        _run(podman, "rm", "-f", "-t", "0", target, check=False)
        _run(podman, "network", "rm", "-f", outer, check=False)
        if not os.environ.get("MCPSPEC_KEEP_COMPOSE_RUN"):
            shutil.rmtree(base, ignore_errors=True)


def test_host_is_invisible_and_mounts_hold(stack: Stack) -> None:
    who, shadow, root_write, tmp_write, ro_write, rw_write, ro_read, env = stack.call("probe", [
        ("identity", {}), ("read_path", {"path": "/etc/shadow"}), ("write_path", {"path": "/pwned", "data": "x"}),
        ("write_path", {"path": "/tmp/scratch", "data": "x"}), ("write_path", {"path": "/in/x", "data": "x"}),
        ("write_path", {"path": "/out/result", "data": "done"}), ("read_path", {"path": "/in/data.txt"}), ("environment", {}),
    ])
    assert (who["uid"], who["gid"]) == (65532, 65532)
    assert all(int(who["caps"][key], 16) == 0 for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb")), who["caps"]
    assert not shadow["ok"]  # the image's own /etc/shadow is root's 0640; the host's is not there at all
    assert not root_write["ok"] and root_write["error"] in ("OSError", "PermissionError")
    assert tmp_write["ok"] and not ro_write["ok"] and rw_write["ok"] and ro_read["data"] == "input\n"
    assert (stack.run_dir / "output" / "result").read_text() == "done"
    listing = stack.call("probe", [("list_dir", {"path": "/opt"}), ("read_path", {"path": str(stack.base / "token")})])
    assert listing[0]["entries"] == ["probe", "site"] and not listing[1]["ok"]  # host paths not mounted are absent
    names = set(env["env"])
    declared = {"PYTHONPATH", "MODE", "GH_TOKEN"}
    engine = {"PATH", "HOSTNAME", "HOME", "container", "TERM", "PWD", "LC_CTYPE"}
    assert declared <= names and names <= declared | engine, names - declared - engine
    assert env["env"]["MODE"] == "a $HOME b"  # $ reaches the server as written: compose interpolated nothing


def test_secrets_land_only_as_declared(stack: Stack) -> None:
    token, env, other = stack.call("probe", [("read_path", {"path": "/run/secrets/token"}), ("environment", {}), ("list_dir", {"path": "/run/secrets"})])
    assert token["data"] == TOKEN + "\n" and env["env"]["GH_TOKEN"] == ENV_TOKEN
    assert sorted(other["entries"]) == ["mcpspec-env", "token"]
    compose = (stack.dir / "compose.yaml").read_text()
    assert TOKEN not in compose and ENV_TOKEN not in compose
    fetch_env, fetch_secrets = stack.call("fetch", [("environment", {}), ("list_dir", {"path": "/run/secrets"})])
    assert "GH_TOKEN" not in fetch_env["env"] and not fetch_secrets["ok"]


def _secret_bind_sources(podman: str, project: str) -> tuple[str, list[str]]:
    """(`podman inspect` of the project's running containers, the host sources of their env-secret binds)."""
    ids = _run(podman, "ps", "-q", "--filter", f"label=io.podman.compose.project={project}").stdout.split()
    inspected = _run(podman, "inspect", *ids).stdout if ids else ""
    sources = [m["Source"] for c in (json.loads(inspected) if ids else []) for m in c.get("Mounts", []) if m.get("Destination") == "/run/secrets/mcpspec-env/GH_TOKEN"]
    return inspected, sources


def _command_lines() -> str:
    lines = []
    for entry in Path("/proc").iterdir():
        try:
            lines.append((entry / "cmdline").read_bytes().decode("utf-8", "replace"))
        except OSError:
            continue
    return "\n".join(lines)


def test_an_env_secret_runs_under_podman_compose_and_leaves_no_trace(stack: Stack) -> None:
    """`provider: env` under podman-compose (which refuses a compose secret with an environment: source): the wrapper
    writes the value to a private file for the command's life; the server gets it, and no artifact, `podman inspect`
    output or command line holds it, and the file is gone when the command ends."""
    for path in stack.dir.iterdir():
        assert ENV_TOKEN not in path.read_text(encoding="utf-8", errors="replace"), path.name
    seen: dict[str, Any] = {}
    session = threading.Thread(target=lambda: seen.update(result=stack.call("probe", [("environment", {}), ("pause", {"seconds": 6})])), daemon=True)
    session.start()
    deadline = time.monotonic() + 60
    sources: list[str] = []
    while not sources and time.monotonic() < deadline and session.is_alive():
        inspected, sources = _secret_bind_sources(stack.podman, stack.project)
        time.sleep(0.3)
    assert sources, "the probe's container did not come up with its env secret bound"
    cmdlines = _command_lines()
    secret = Path(sources[0])
    modes = (secret.parent.stat().st_mode & 0o777, secret.stat().st_mode & 0o777)
    session.join(90)
    env = seen["result"][0]["env"]
    assert env["GH_TOKEN"] == ENV_TOKEN and ENV_SOURCE not in env
    assert ENV_TOKEN not in inspected and ENV_TOKEN not in cmdlines
    assert not secret.is_relative_to(stack.dir) and modes == (0o700, 0o444), (secret, modes)
    assert not secret.parent.exists(), "the wrapper left the secret's directory behind"
    # `up` too (where podman-compose refused an environment: source): the container is created with the bind, and holds no value.
    stack.up("probe")
    ids = _run(stack.podman, "ps", "-a", "-q", "--filter", f"label=io.podman.compose.project={stack.project}", "--filter", "label=io.podman.compose.service=probe").stdout.split()
    assert ids and ENV_TOKEN not in _run(stack.podman, "inspect", *ids).stdout


def test_no_route_out_when_egress_is_denied(stack: Stack) -> None:
    loopback, test_host, listen, interfaces = stack.call("probe", [
        ("connect", {"host": "127.0.0.2", "port": 80}), ("connect", {"host": stack.target_ip, "port": 80}), ("listen", {"port": 8080}),
        ("read_path", {"path": "/proc/net/dev"})])
    assert not loopback["ok"] and not test_host["ok"]
    # EPERM: the syscall filter of a server without egress or HTTP refuses AF_INET sockets; were one made,
    # network_mode none has no route at all (ENETUNREACH, EHOSTUNREACH) and no interface but its own loopback
    assert test_host["errno"] == 1 and loopback["errno"] == 1, (test_host, loopback)
    assert not listen["ok"]
    devices = [line.split(":")[0].strip() for line in interfaces["data"].splitlines()[2:]]
    assert devices == ["lo"], devices


def test_only_the_allowlisted_name_goes_through_the_proxy(stack: Stack) -> None:
    stack.up("fetch_link", "fetch_egress")
    allowed, denied, metadata, unlisted_literal, direct = stack.call("fetch", [
        ("http_get", {"url": "http://allowed.test/"}), ("http_get", {"url": "http://denied.test/"}),
        ("http_get", {"url": "http://169.254.169.254/latest/meta-data/"}), ("http_get", {"url": f"http://{stack.target_ip}/"}),
        ("connect", {"host": stack.target_ip, "port": 80}),
    ])
    assert allowed == {"ok": True, "status": 200, "body": "reached"}, allowed
    assert denied["status"] == 403 and metadata["status"] == 403 and unlisted_literal["status"] == 403
    assert not direct["ok"]  # without the proxy the internal network leads nowhere
    log = _run(stack.podman, "logs", f"{stack.project}_fetch_egress_1", check=False)
    assert "denied.test" in log.stdout + log.stderr or "TCP_DENIED" in log.stdout + log.stderr


def test_the_proxy_answers_nothing_itself_and_passes_only_http(stack: Stack) -> None:
    """Issue 25 item 3 on compose (the proxy image runs the shared squid rules): squid's manager
    (cache_object:// and /squid-internal-mgr/ on the allowed host, on its own address and name),
    its internal pages, TRACE and other schemes are refused, and nothing of its host leaks."""
    stack.up("fetch_egress")
    close = "Connection: close\r\n\r\n"
    requests = [
        f"GET cache_object://allowed.test:80/info HTTP/1.1\r\nHost: allowed.test:80\r\n{close}",
        f"GET cache_object://mcpspec-egress:3128/info HTTP/1.1\r\nHost: mcpspec-egress:3128\r\n{close}",
        f"GET /squid-internal-mgr/info HTTP/1.1\r\nHost: mcpspec-egress:3128\r\n{close}",
        f"GET http://allowed.test/squid-internal-mgr/menu HTTP/1.1\r\nHost: allowed.test\r\n{close}",
        f"GET /squid-internal-static/icons/SN.png HTTP/1.1\r\nHost: mcpspec-egress:3128\r\n{close}",
        f"TRACE http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nMax-Forwards: 0\r\n{close}",
        f"GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n{close}",
        f"GET whois://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n{close}",
    ]
    markers = ["Squid Object Cache", "Build Info", "squid.pid", "cache.log", "/etc/", "/var/", "/run/", "/tmp/", "reached"]
    (answer,) = stack.call("fetch", [("spawn", {"argv": ["/usr/bin/python3", "-c", PROXY_CLIENT, json.dumps(requests), json.dumps(markers)]})])
    assert answer["ok"] and answer["status"] == 0, answer
    got = json.loads(answer["stdout"])
    assert [(code, leaked) for code, leaked in got if code != 403 or leaked] == [], got


def test_limits_hold(stack: Stack) -> None:
    forks, = stack.call("probe", [("fork_many", {"count": 64})])
    assert forks["started"] < 32 and forks["error"], forks
    started = time.monotonic()
    with pytest.raises(AssertionError):  # the shim ends the server at max_lifetime, mid-call
        stack.call("brief", [("pause", {"seconds": 30})])
    assert time.monotonic() - started < 25


def _post(url: str, request: dict[str, Any], seconds: float = 60) -> dict[str, Any]:
    """POST to the HTTP server through its published port, retrying while the stack starts."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, json.dumps(request).encode(), method="POST"), timeout=60) as response:
                answer: dict[str, Any] = json.loads(response.read())
                return answer
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _held(result: dict[str, Any], service: HostService) -> None:
    """Nothing of the host was in reach: no interface but loopback, no gateway, no connection, no DNS answer."""
    assert result["devices"] == ["lo"] and result["gateways"] == [], result
    assert not [t for t, r in result["connect"].items() if r == "connected"], result["connect"]
    assert not [q for q, r in result["dns"].items() if r == "answered"], result["dns"]
    assert all(not r.startswith("resolved") for r in result["resolve"].values()), result["resolve"]
    assert service.peers == []


def test_no_host_address_or_resolver_in_reach_of_a_networked_server(stack: Stack) -> None:
    """Issue 25 items 12-13: a server on a bridge (even an internal one) reaches every host service on
    0.0.0.0/:: through the bridge's gateway, and its DNS server forwards any name to the host's resolvers.
    The HTTP server (egress denied, port published) and the allowlisted server attack every host address,
    both families, and every resolver in sight; a server placed the old way (on an internal network) is
    the control that shows the attack reaches the host there."""
    service = HostService()
    control = f"{stack.project}-control"
    try:
        stack.up("web_link", "web_port", "web", "fetch_link", "fetch_egress")
        targets = [[address, service.port] for address in host_addresses(stack.podman)]
        request = {"targets": targets, "names": [control], "port": service.port}
        web = _post(f"http://127.0.0.1:{stack.web_port}/", request)  # through the published port: the layout works
        _held(web, service)
        fetched, = stack.call("fetch", [("spawn", {"argv": ["/usr/bin/python3", "/opt/probe/net_probe.py", "attack", json.dumps(request)]})])
        assert fetched["status"] == 0, fetched
        _held(json.loads(fetched["stdout"]), service)
        ipv4 = [address for address, _ in targets if ":" not in address]
        through_proxy = stack.call("fetch", [("http_get", {"url": f"http://{address}:{service.port}/"}) for address in ipv4])
        assert all(answer["status"] == 403 for answer in through_proxy), through_proxy
        assert service.peers == []
        # The control: the old layout (an internal network of its own) reaches the host and a resolver.
        network = f"{stack.project}_control"
        _run(stack.podman, "network", "create", "--internal", network)
        targets = [[address, service.port] for address in host_addresses(stack.podman)]
        done = _run(stack.podman, "run", "--rm", "--name", control, "--network", network, "--user", "65532:65532", "--cap-drop", "ALL",
                    "-v", f"{stack.base}/probe:/opt/probe:ro", stack.image, "/usr/bin/python3", "/opt/probe/net_probe.py", "attack",
                    json.dumps({"targets": targets, "names": [control], "port": service.port}))
        old = json.loads(done.stdout)
        assert "eth0" in old["devices"] and old["gateways"], old
        assert [t for t, r in old["connect"].items() if r == "connected"] and service.peers, old["connect"]
        assert [q for q, r in old["dns"].items() if r == "answered"], old["dns"]
    finally:
        service.close()
        _run(stack.podman, "rm", "-f", "-t", "0", control, check=False)
        _run(stack.podman, "network", "rm", "-f", f"{stack.project}_control", check=False)


# What the project's policy refuses for every server and helper (issue 25 item 2); the probe makes each call raw.
REFUSED = (
    "io_uring_setup", "keyctl_session_keyring_id", "keyctl_read_session_keyring", "add_key", "request_key", "userfaultfd",
    "perf_event_open", "bpf", "ptrace_attach_child", "ptrace_traceme", "process_vm_readv_child", "unshare_user", "unshare_mount",
    "unshare_net", "clone_newuser", "clone3_newuser", "setns", "mount_tmpfs", "kexec_load", "init_module", "ioctl_tiocsti",
    "ioctl_tiocsti_upper_bits", "personality_no_randomize", "socket_vsock", "socket_netlink", "socket_packet",
)
NEEDED = ("clone_plain", "personality_query", "socketpair_unix", "socket_unix")
SYSCALL_PROBE_ARGV = ["/usr/bin/python3", "/opt/probe/syscall_probe.py"]


def _refused_as_the_policy_says(answers: dict[str, str], inet: bool, where: str) -> None:
    assert not [name for name in REFUSED if answers[name] not in ("EPERM", "ENOSYS")], (where, {n: answers[n] for n in REFUSED})
    assert all(answers[name] == "ok" for name in NEEDED), (where, answers)
    assert (answers["socket_inet"], answers["socket_inet6"]) == (("ok", "ok") if inet else ("EPERM", "EPERM")), (where, answers)


def _exec_probe(stack: Stack, service: str) -> dict[str, str]:
    """The probe in a running service's container, read from stdin (helpers mount no probe): podman exec
    runs it under the container's seccomp profile."""
    done = subprocess.run([stack.podman, "exec", "-i", "--user", "65532:65532", f"{stack.project}_{service}_1", "/usr/bin/python3", "-"],
                          input=SYSCALL_PROBE.read_text(encoding="utf-8"), capture_output=True, text=True, timeout=120, env=podman_env(), check=False)
    assert done.returncode == 0, (service, done.stderr[-2000:])
    answers: dict[str, str] = json.loads(done.stdout)
    return answers


def test_syscall_filter_refuses_what_the_policy_refuses(stack: Stack) -> None:
    """Every service runs under the generated seccomp profile: io_uring, keyrings, bpf, perf, userfaultfd,
    ptrace, new namespaces, AF_VSOCK and AF_NETLINK sockets are refused inside each, with the server's
    socket families from its egress. The control is podman's default profile on the same image, which
    allows AF_VSOCK, AF_NETLINK, keyctl and new user namespaces here."""
    stack.up("web_link", "web_port", "web", "fetch_link", "fetch_egress")
    probe, = stack.call("probe", [("spawn", {"argv": SYSCALL_PROBE_ARGV})])
    _refused_as_the_policy_says(json.loads(probe["stdout"]), inet=False, where="probe (stdio, egress denied)")
    fetch, = stack.call("fetch", [("spawn", {"argv": SYSCALL_PROBE_ARGV})])
    _refused_as_the_policy_says(json.loads(fetch["stdout"]), inet=True, where="fetch (allowlist)")
    _refused_as_the_policy_says(_exec_probe(stack, "web"), inet=True, where="web (HTTP)")
    for helper in ("web_link", "web_port", "fetch_link", "fetch_egress"):
        _refused_as_the_policy_says(_exec_probe(stack, helper), inet=True, where=helper)
    default = json.loads(_run(stack.podman, "run", "--rm", "--network", "none", "--user", "65532:65532", "--cap-drop", "ALL",
                              "--security-opt", "no-new-privileges", "-v", f"{stack.base}/probe:/opt/probe:ro", stack.image, *SYSCALL_PROBE_ARGV).stdout)
    assert [name for name in REFUSED if default[name] not in ("EPERM", "ENOSYS")], default
