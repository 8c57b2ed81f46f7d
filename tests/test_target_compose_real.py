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
import subprocess
import sys
import tempfile
import time
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
from podman_images import Recipe, pinned, podman_env

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import call_tools, copy_mcp_closure, sandbox_python_matches

IMAGE = Recipe("mcpspec-compose-test", ("python3", "squid"))
PROBE = Path(__file__).parent / "probe" / "probe_server.py"
# The test host's network: internal (no packet leaves it) and in public address space, because the
# proxy refuses private ranges by default. The third octet is drawn per run and retried when a
# subnet is taken (by the host, or by a network an interrupted run left behind).
SUBNET_PREFIX = "44.1"
TOKEN = "file-secret-7e1f0a"
ENV_TOKEN = "env-secret-3b9c27"

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
  gh: {{provider: file, ref: {base}/gh}}
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
        self.dir = base / "build"
        self.dir.mkdir()
        for name, text in files.items():
            (self.dir / name).write_text(text, encoding="utf-8")
        self.run_dir = base / "run"
        for sub in ("output", "input"):
            (self.run_dir / sub).mkdir(parents=True)
            (self.run_dir / sub).chmod(0o777)
        (self.run_dir / "input" / "data.txt").write_text("input\n")

    def env(self) -> dict[str, str]:
        return {**podman_env(), "MCPSPEC_RUN_DIR": str(self.run_dir)}

    def args(self, *rest: str) -> list[str]:
        return ["-p", self.project, "-f", str(self.dir / "compose.yaml"), *rest]

    def up(self, service: str) -> None:
        _run(self.compose, *self.args("up", "-d", "--no-deps", service), env=self.env(), timeout=180)

    def call(self, service: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        launcher = self.base / f"{service}.sh"
        words = " ".join(f"'{w}'" for w in [self.compose, *self.args("run", "--rm", "-T", "--no-deps", service)])
        launcher.write_text(f"#!/bin/sh\nexec {words} 2>>{self.base}/compose-stderr.log\n")
        launcher.chmod(0o755)
        return call_tools(launcher, calls, env={k: v for k, v in self.env().items() if k in ("CONTAINERS_CONF", "MCPSPEC_RUN_DIR", "HOME", "PATH")}, timeout=120)

    def down(self) -> None:
        _run(self.compose, *self.args("down", "-t", "0"), env=self.env(), check=False, timeout=180)


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
    (base / "gh").write_text(ENV_TOKEN + "\n")
    plan = load_text(SPEC.format(image=image, base=base), "mcp-sandbox.yaml")
    build = build_plan(plan, "compose", options=BuildOptions(proxy_image=image))
    assert not build.blocked, [r.message for r in build.active]
    box = Stack(podman, compose, base, {k: v for k, v in build.files.items() if not k.startswith(".")})
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


def test_no_route_out_when_egress_is_denied(stack: Stack) -> None:
    loopback, test_host, listen, interfaces = stack.call("probe", [
        ("connect", {"host": "127.0.0.2", "port": 80}), ("connect", {"host": stack.target_ip, "port": 80}), ("listen", {"port": 8080}),
        ("read_path", {"path": "/proc/net/dev"})])
    assert not loopback["ok"] and not test_host["ok"]
    assert test_host["errno"] in (101, 113)  # ENETUNREACH, EHOSTUNREACH: network_mode none has no route at all
    assert listen["ok"]  # a listener, but in a namespace whose only interface is its own loopback: nothing can reach it
    devices = [line.split(":")[0].strip() for line in interfaces["data"].splitlines()[2:]]
    assert devices == ["lo"], devices


def test_only_the_allowlisted_name_goes_through_the_proxy(stack: Stack) -> None:
    stack.up("fetch_egress")
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
