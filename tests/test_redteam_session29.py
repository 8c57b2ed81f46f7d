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
import time
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


def _launcher(base: Path, name: str, arguments: str, server_yaml: str) -> Path:
    """The bwrap launcher of one server ``name`` running /attacks/<name>.py with ``arguments``."""
    spec = base / f"{name}.yaml"
    spec.write_text(f"""version: 1
project: rt
agents:
  tester: {{servers: [{name}]}}
servers:
  {name}:
    command: [{SANDBOX_PYTHON}, -I, -S, /attacks/{name}.py{arguments}]
    mounts:
      - {{from: {base / 'attacks'}, to: /attacks}}
{server_yaml}
""", encoding="utf-8")
    write_build(base / f"out-{name}", build_plan(load(spec), "bwrap", fail_on="critical"))
    return base / f"out-{name}" / f"{name}.py"


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
        launcher = _launcher(base, "flood", "", f"""    runtime: {{memory: 64Mi, pids: {PIDS}}}
    egress: {{allow: ["127.0.0.1:{listener.port}"]}}""")
        process = subprocess.Popen([str(launcher)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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


# Pipelined requests for distinct 240-character names the allowlist refuses, until squid's log
# passes 16 MiB (the launcher read at most that much of it, and recorded nothing when it was
# longer), then one allowed request: the one the audit must still name.
LOG_FLOOD = r'''
import json, socket, sys, urllib.request
port, name = int(sys.argv[1]), ".".join(["a" * 60] * 4)
s, sent = socket.create_connection(("127.0.0.1", 3128)), 0
while sent < 62000:
    s.sendall(b"".join(b"GET http://%d.%s/ HTTP/1.1\r\nHost: x\r\n\r\n" % (sent + i, name.encode()) for i in range(500)))
    answers = b""
    while answers.count(b"HTTP/1.1 ") < 500:
        chunk = s.recv(1 << 20)
        if not chunk:
            s = socket.create_connection(("127.0.0.1", 3128))
            break
        answers += chunk
    sent += 500
urllib.request.urlopen(f"http://127.0.0.1:{port}/after-the-flood", timeout=10).read()
print(json.dumps({"sent": sent}), flush=True)
sys.stdin.readline()
'''


def _log_flood_launcher(base: Path, listener: Listener) -> Path:
    (base / "attacks" / "logflood.py").write_text(LOG_FLOOD, encoding="utf-8")
    (base / "attacks" / "logflood.py").chmod(0o644)
    return _launcher(base, "logflood", f', "{listener.port}"', f'    egress: {{allow: ["127.0.0.1:{listener.port}"]}}')


def test_a_flood_of_refused_requests_does_not_erase_the_allowed_ones_from_the_audit(base: Path) -> None:
    listener = Listener("127.0.0.1")
    try:
        launcher = _log_flood_launcher(base, listener)
        done = subprocess.run([str(launcher)], capture_output=True, timeout=240, check=False, stdin=subprocess.DEVNULL,
                              env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "logflood"})
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert json.loads(done.stdout.decode().strip().splitlines()[-1])["sent"] >= 62000
        audits = [json.loads(line) for line in done.stderr.decode().splitlines() if line.startswith('{"event":"launch"')]
        assert len(audits) == 1, done.stderr.decode()[-2000:]
        log = audits[0]["egress_log"]
        allowed = [item for item in log if item["result"] == "allowed"]
        assert [(item["host"], item["port"], item["status"]) for item in allowed] == [("127.0.0.1", listener.port, 200)], log[-3:]
        refused = sum(int(item.get("requests", 1)) for item in log if item["result"] == "refused")
        assert refused + int(audits[0].get("egress_log_omitted", {}).get("refused", 0)) >= 62000
        assert len(json.dumps(audits[0])) < 1 << 20
    finally:
        listener.close()


def test_the_proxys_log_holds_no_more_than_seconds_of_a_flood_on_the_host(base: Path) -> None:
    """The same flood wrote 18 MiB to squid's log in the launcher's state directory (/tmp: on many
    hosts a tmpfs, memory outside the sandbox's cgroup), and an hour of it would fill the host."""
    listener = Listener("127.0.0.1")
    try:
        launcher = _log_flood_launcher(base, listener)
        process = subprocess.Popen([str(launcher)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "logheld"})
        assert process.stdin is not None and process.stdout is not None
        try:
            line = process.stdout.readline()
            assert line, process.stderr.read().decode()[-2000:] if process.stderr else ""
            time.sleep(2.5)  # the launcher reads the log every second
            logs = list(Path("/tmp").glob("mcpspec-logflood-logheld.*/squid/access.log"))
            assert len(logs) == 1, logs
            st = logs[0].stat()
            assert st.st_size > 16 << 20, st.st_size
            assert st.st_blocks * 512 < 1 << 20, f"the proxy's log holds {st.st_blocks * 512} bytes on the host"
        finally:
            process.communicate(b"stop\n", timeout=60)  # the audit line (up to 2,000 entries) comes on stderr
    finally:
        listener.close()
