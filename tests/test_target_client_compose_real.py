"""The client target through compose, run for real: the MCP client starts each server with the
command, arguments and environment its generated config gives (`podman-compose ... run --rm -T
SERVER`), and the probe server attacks the sandbox from inside.

Nothing but the client's entry starts the stack: `run` itself brings up the egress proxy the
server depends on. The image and the test host's internal network are the compose test's.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcpspec.api import load_text
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import build_plan
from mcpspec.targets.writer import write_build
from podman_images import podman_env
from test_target_compose_real import _create_internal_network, _run, compose_tools, probe_base, start_test_host

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import call_tools

TOKEN = "client-compose-secret-51d2"

SPEC = """\
version: 1
project: ccreal
workspace:
  root: {base}/ws
  dirs:
    output: {{mode: rw}}
    input: {{mode: ro}}
secrets:
  token: {{provider: file, ref: {base}/token}}
defaults:
  runtime: {{user: 65532, pids: 32, memory: 256Mi}}
  env: {{set: {{PYTHONPATH: /opt/site}}}}
agents:
  coder: {{servers: [probe, fetch]}}
servers:
  probe:
    image: {image}
    command: [/usr/bin/python3, /opt/probe/probe_server.py]
    mounts:
      - {{from: {base}/site, to: /opt/site}}
      - {{from: {base}/probe, to: /opt/probe}}
      - {{from: workspace.output, to: /out}}
      - {{from: workspace.input, to: /in}}
    secrets:
      - {{use: token, as: {{file: /run/secrets/token}}}}
  fetch:
    image: {image}
    command: [/usr/bin/python3, /opt/probe/probe_server.py]
    mounts:
      - {{from: {base}/site, to: /opt/site}}
      - {{from: {base}/probe, to: /opt/probe}}
    egress: {{allow: ["allowed.test:80"]}}
"""


@dataclass
class Setup:
    base: Path
    entries: dict[str, Any]
    target_ip: str
    path: str  # the PATH the client starts servers with: podman-compose's directory first

    def call(self, server: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        entry = self.entries[server]
        launcher = self.base / f"{server}.sh"
        # Exactly what the client runs: its command and arguments, with its environment added.
        words = " ".join(shlex.quote(word) for word in [entry["command"], *entry["args"]])
        launcher.write_text(f"#!/bin/sh\nexec {words} 2>>{shlex.quote(str(self.base / 'stderr.log'))}\n")
        launcher.chmod(0o755)
        machine = {k: v for k, v in podman_env().items() if k in ("CONTAINERS_CONF", "HOME")}
        return call_tools(launcher, calls, env={**machine, "PATH": self.path, **entry.get("env", {})}, timeout=180)


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    podman, compose, image = compose_tools()
    base = probe_base("mcpspec-client-compose-")
    (base / "token").write_text(TOKEN + "\n")
    plan = load_text(SPEC.format(image=image, base=base), "mcp-sandbox.yaml")
    out = base / "out"
    options = BuildOptions(client="claude-desktop", via="podman-compose", out_dir=str(out), spec_path=str(base / "mcp-sandbox.yaml"), proxy_image=image)
    build = build_plan(plan, "client", options=options)
    assert not build.blocked, [r.message for r in build.active]
    write_build(out, build)
    entries = json.loads((out / "claude_desktop_config.json").read_text())["mcpServers"]
    assert TOKEN not in json.dumps(entries)
    project = entries["fetch"]["args"][entries["fetch"]["args"].index("--project-name") + 1]
    compose_file = entries["fetch"]["args"][entries["fetch"]["args"].index("--file") + 1]
    # The run directory the entry names; its subdirectories exist before a run, as the target's usage says.
    run_dir = Path(entries["probe"]["env"]["MCPSPEC_RUN_DIR"])
    assert run_dir.is_relative_to(base / "ws")
    assert entries["fetch"]["env"] == entries["probe"]["env"], "compose reads the whole file: every entry sets the run directory"
    for sub in ("output", "input"):
        (run_dir / sub).mkdir(parents=True)
        (run_dir / sub).chmod(0o777)
    outer = f"{project}_fetch_out"
    env = {**podman_env(), **entries["probe"]["env"]}
    # The entries fix the project's name: clear what an interrupted run of this test may have left.
    _run(compose, "--project-name", project, "--file", compose_file, "down", "-v", "-t", "0", env=env, check=False, timeout=180)
    _run(podman, "rm", "-f", "-t", "0", f"{project}-allowed", check=False)
    _run(podman, "network", "rm", "-f", outer, check=False)
    target_ip = _create_internal_network(podman, outer)
    host = f"{project}-allowed"
    try:
        start_test_host(podman, image, host, outer, target_ip)
        yield Setup(base, entries, target_ip, f"{Path(compose).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    finally:
        _run(compose, "--project-name", project, "--file", compose_file, "down", "-v", "-t", "0", env=env, check=False, timeout=180)
        _run(podman, "rm", "-f", "-t", "0", host, check=False)
        _run(podman, "network", "rm", "-f", outer, check=False)
        if not os.environ.get("MCPSPEC_KEEP_COMPOSE_RUN"):
            shutil.rmtree(base, ignore_errors=True)


def test_the_entry_starts_the_sandboxed_server_with_its_mounts_and_secret(setup: Setup) -> None:
    who, written, token, tried = setup.call("probe", [
        ("identity", {}), ("write_path", {"path": "/out/result", "data": "done"}),
        ("read_path", {"path": "/run/secrets/token"}), ("connect", {"host": setup.target_ip, "port": 80}),
    ])
    assert (who["uid"], who["gid"]) == (65532, 65532)
    assert all(int(who["caps"][key], 16) == 0 for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb")), who["caps"]
    assert written["ok"] and token["data"] == TOKEN + "\n"
    assert not tried["ok"], "a server without egress has no route"
    run_dir = Path(setup.entries["probe"]["env"]["MCPSPEC_RUN_DIR"])
    assert (run_dir / "output" / "result").read_text() == "done"


def test_the_entry_alone_brings_up_the_egress_proxy_which_passes_only_the_allowlist(setup: Setup) -> None:
    allowed, denied, literal, direct = setup.call("fetch", [
        ("http_get", {"url": "http://allowed.test/"}), ("http_get", {"url": "http://denied.test/"}),
        ("http_get", {"url": f"http://{setup.target_ip}/"}), ("connect", {"host": setup.target_ip, "port": 80}),
    ])
    assert allowed == {"ok": True, "status": 200, "body": "reached"}, allowed
    assert denied["status"] == 403 and literal["status"] == 403
    assert not direct["ok"]
