"""Escapes a red team found in the issue 25 controls, each run as a real attack on generated
artifacts; a test fails while its escape exists.

bwrap: the egress bridge (a socat on the host, outside the sandbox's cgroup) forked one host
process per connection with no bound. The server can connect to the bridge's socket directly
(it is bound into the sandbox for the in-sandbox relay), so a server under `pids: 16` and
`memory: 64Mi` made 300 host processes outside both limits, and could have made one per
descriptor it may open.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_tool

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import SANDBOX_PYTHON, Listener, wait_gone

from mcpspec.api import load
from mcpspec.targets.build import build_plan
from mcpspec.targets.writer import write_build

PIDS = 16
CONNECTIONS = 300

# Connects straight to the bridge's socket (not through the in-sandbox relay, whose forks the
# sandbox's pids.max counts) and holds every connection it gets until told to stop.
BRIDGE_FLOOD = r'''
import json, socket, sys, time
held, refused, end = [], 0, time.monotonic() + 20
while len(held) < CONNECTIONS and refused < 10 and time.monotonic() < end:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    give_up = time.monotonic() + 0.5
    while True:
        try:
            s.connect("/run/mcpspec/egress.sock")
            held.append(s)
            break
        except BlockingIOError:  # the backlog is full: the bridge accepts no faster, or no more
            if time.monotonic() > give_up:
                refused += 1
                s.close()
                break
            time.sleep(0.005)
print(json.dumps({"held": len(held), "refused": refused}), flush=True)
sys.stdin.readline()
'''.replace("CONNECTIONS", str(CONNECTIONS))


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    for tool in ("bwrap", "socat", "squid"):
        require_tool(tool)
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("the red team's attacks run launchers as root, as MCP clients on servers do (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("the red team's attacks run launchers as root")
    path = Path(tempfile.mkdtemp(prefix="mcpspec-rt29-", dir="/tmp"))  # the sandbox's uid must reach it
    path.chmod(0o755)
    (path / "attacks").mkdir(mode=0o755)
    script = path / "attacks" / "flood.py"
    script.write_text(BRIDGE_FLOOD, encoding="utf-8")
    script.chmod(0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text(encoding="utf-8")
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry))
    return found


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def test_connections_to_the_egress_bridge_cost_no_more_host_processes_than_the_pids_limit(base: Path) -> None:
    listener = Listener("127.0.0.1")
    try:
        spec = base / "flood.yaml"
        spec.write_text(f"""version: 1
project: rt
agents:
  tester: {{servers: [flood]}}
servers:
  flood:
    command: [{SANDBOX_PYTHON}, -I, -S, /attacks/flood.py]
    mounts:
      - {{from: {base / 'attacks'}, to: /attacks}}
    runtime: {{memory: 64Mi, pids: {PIDS}}}
    egress: {{allow: ["127.0.0.1:{listener.port}"]}}
""", encoding="utf-8")
        write_build(base / "out", build_plan(load(spec), "bwrap", fail_on="critical"))
        process = subprocess.Popen([str(base / "out" / "flood.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "flood"})
        assert process.stdin is not None and process.stdout is not None
        try:
            line = process.stdout.readline()
            assert line, process.stderr.read().decode()[-2000:] if process.stderr else ""
            said = json.loads(line)
            bridges = [pid for pid in _children(process.pid) if _name(pid) == "socat"]
            assert len(bridges) == 1, bridges
            forked = [pid for pid in _children(bridges[0]) if _name(pid) == "socat"]
            assert len(forked) <= PIDS, f"{len(forked)} host processes relay the sandbox's {said['held']} connections under pids: {PIDS}"
        finally:
            process.stdin.write(b"stop\n")
            process.stdin.close()
            process.wait(timeout=60)
        assert wait_gone("/attacks/flood.py") == []
    finally:
        listener.close()
