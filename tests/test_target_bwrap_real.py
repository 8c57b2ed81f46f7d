"""Proof with real processes: generated bubblewrap launchers run the `mcp` SDK probe
server, and every boundary the spec draws holds.

Network: only loopback. 127.0.0.1 listeners stand in for allowed destinations;
127.0.0.2, listed as denied by the spec under test, stands in for a metadata
address (the proxy is never asked for a real metadata address).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_tool
from egress_lab import FAR_V4, PORT, make_lab

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import Listener as _Listener
from harness import Sandbox, call_tools, sandbox_python_matches
from harness import leftovers as _leftovers
from harness import wait_gone as _wait_gone

SECRET_ENV_VALUE = "tok-e2e-7d1f0c2a9b"
SECRET_FILE_VALUE = "file-secret-93be41"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    for tool in ("bwrap", "socat", "squid", "setpriv", "/usr/bin/python3"):
        require_tool(tool)
    if not sandbox_python_matches():
        pytest.fail("/usr/bin/python3 must be the same minor version as the test interpreter (the probe server runs on it)")
    box = Sandbox()
    yield box
    box.cleanup()


@pytest.fixture(scope="module")
def listeners() -> Iterator[tuple[_Listener, _Listener, _Listener]]:
    allowed, other, denied = _Listener("127.0.0.1"), _Listener("127.0.0.1"), _Listener("127.0.0.2")
    yield allowed, other, denied
    for item in (allowed, other, denied):
        item.close()


def test_every_boundary_holds_for_a_server_with_an_egress_allowlist(sandbox: Sandbox, listeners: tuple[_Listener, _Listener, _Listener]) -> None:
    allowed, other, denied = listeners
    base = sandbox.base
    secret_file = base / "host-secret.json"
    secret_file.write_text(SECRET_FILE_VALUE, encoding="utf-8")
    secret_file.chmod(0o600)
    shadow = base / "shadow-like"
    shadow.write_text("root:$6$not-for-the-sandbox", encoding="utf-8")
    shadow.chmod(0o644)  # readable on the host by anyone: only the mount namespace keeps it out
    hosts = base / "hosts"
    hosts.write_text("127.0.0.1 private.test\n", encoding="utf-8")
    audit = base / "audit-boundaries.jsonl"
    spec = sandbox.spec(
        "boundaries",
        f"""    env:
      set: {{PYTHONPATH: /opt/site, GREETING: "it's $(not run) %n \\\\ \\"q\\""}}
    secrets:
      - {{use: token, as: {{env: PROBE_TOKEN}}}}
      - {{use: keyfile, as: {{file: /run/secrets/key.json}}}}
    runtime: {{memory: 768Mi, pids: 24}}
    lifecycle: {{max_lifetime: 5m, idle_timeout: 5m}}
    logging: {{audit: true, sink: {audit}}}
    egress:
      allow: ["127.0.0.1:{allowed.port}", "private.test:{other.port}", "127.0.0.2:{denied.port}"]
      deny: ["127.0.0.2/32"]
      via: proxy""",
        extra=f"""secrets:
  token: {{provider: env, ref: E2E_TOKEN_SOURCE}}
  keyfile: {{provider: file, ref: {secret_file}}}""",
    )
    launcher = sandbox.build(spec)
    run_dir = base / "ws-boundaries" / "tester" / "run-a"
    other_run = base / "ws-boundaries" / "tester" / "run-b" / "output"
    other_run.mkdir(parents=True)
    (other_run / "theirs.txt").write_text("another run's data", encoding="utf-8")
    (run_dir / "input").mkdir(parents=True)
    (run_dir / "input" / "readme.txt").write_text("input file", encoding="utf-8")
    (run_dir / "input" / "escape").symlink_to(shadow)
    (run_dir / "input" / "escape-dir").symlink_to(other_run)

    env = {"E2E_TOKEN_SOURCE": SECRET_ENV_VALUE, "MCPSPEC_RUN_ID": "run-a", "MCPSPEC_EGRESS_HOSTS_FILE": str(hosts), "HOME": "/root"}
    calls: list[tuple[str, dict[str, object]]] = [
        ("identity", {}),
        ("environment", {}),
        ("read_path", {"path": "/run/secrets/key.json"}),
        ("read_path", {"path": str(shadow)}),
        ("read_path", {"path": str(secret_file)}),
        ("list_dir", {"path": "/root"}),
        ("list_dir", {"path": os.path.expanduser("~")}),
        ("read_path", {"path": str(other_run / "theirs.txt")}),
        ("list_dir", {"path": "/workspace"}),
        ("read_path", {"path": "/workspace/input/readme.txt"}),
        ("read_path", {"path": "/workspace/input/escape"}),
        ("list_dir", {"path": "/workspace/input/escape-dir"}),
        ("write_path", {"path": "/workspace/input/new.txt", "data": "x"}),
        ("write_path", {"path": "/workspace/output/result.txt", "data": "written inside"}),
        ("write_path", {"path": "/usr/evil", "data": "x"}),
        ("http_get", {"url": f"http://127.0.0.1:{allowed.port}/"}),
        ("http_get", {"url": f"http://127.0.0.1:{other.port}/"}),
        ("http_get", {"url": f"http://127.0.0.2:{denied.port}/"}),
        ("http_get", {"url": f"http://private.test:{other.port}/"}),
        ("http_get", {"url": "http://unlisted.test/"}),
        ("connect", {"host": "127.0.0.1", "port": allowed.port}),
        ("cmdlines", {}),
        ("list_dir", {"path": "/run/secrets"}),
        ("fork_many", {"count": 60}),
        ("allocate", {"megabytes": 1024}),
        ("allocate", {"megabytes": 64}),
    ]
    host_cmdlines_seen: list[str] = []

    def watch_host() -> None:
        for _ in range(40):
            host_cmdlines_seen.extend(_leftovers(""))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch_host)
    watcher.start()
    got = dict(enumerate(call_tools(launcher, calls, env)))
    watcher.join()
    by = {index: (calls[index][0], result) for index, result in got.items()}

    identity = by[0][1]
    assert identity["uid"] == 65532 and identity["euid"] == 65532
    assert all(int(value, 16) == 0 for value in identity["caps"].values()), identity["caps"]

    environment = by[1][1]["env"]
    proxies = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}
    # PWD comes from bwrap, LC_CTYPE from Python's own locale coercion; PATH is the target's.
    assert set(environment) - {"PWD", "LC_CTYPE"} == {"PYTHONPATH", "GREETING", "PROBE_TOKEN", "PATH", *proxies}
    assert environment["GREETING"] == "it's $(not run) %n \\ \"q\""
    assert environment["PROBE_TOKEN"] == SECRET_ENV_VALUE

    assert by[2][1] == {"ok": True, "data": SECRET_FILE_VALUE}
    for index in (3, 4, 5, 6, 7):
        assert by[index][1]["ok"] is False and by[index][1]["errno"] == 2, by[index]
    assert by[8][1]["entries"] == ["input", "output", "tmp"]
    assert by[9][1] == {"ok": True, "data": "input file"}
    assert by[10][1]["ok"] is False and by[11][1]["ok"] is False  # planted symlinks lead nowhere
    assert by[12][1]["errno"] == 30  # read-only mount: EROFS
    assert by[13][1] == {"ok": True}
    assert (run_dir / "output" / "result.txt").read_text(encoding="utf-8") == "written inside"
    assert by[14][1]["ok"] is False

    assert by[15][1]["ok"] is True and by[15][1]["body"] == "reached"
    assert by[16][1]["status"] == 403  # same host, a port the spec does not list
    assert by[17][1]["status"] == 403  # listed, but also in the spec's deny list (the metadata stand-in)
    assert by[18][1]["status"] == 403  # a listed name that resolves to a private address
    assert by[19][1]["status"] == 403  # a name nobody listed (refused before any DNS lookup)
    assert by[20][1]["ok"] is False  # no route around the proxy

    inside = by[21][1]["cmdlines"]
    assert inside and not any(SECRET_ENV_VALUE in c or SECRET_FILE_VALUE in c for c in inside.values())
    assert not any(SECRET_ENV_VALUE in c or SECRET_FILE_VALUE in c for c in host_cmdlines_seen)
    assert by[22][1]["entries"] == ["key.json"]  # the env secret is not also a file

    assert by[23][1]["started"] < 24 and by[23][1]["error"] == "BlockingIOError"
    assert by[24][1] == {"ok": False, "error": "MemoryError"}
    assert by[25][1]["ok"] is True

    # With an idle timeout the client talks to a socat relay; the launcher behind it finishes just after.
    assert _wait_gone(base.name) == [], "a process of the sandbox or its launcher is still running"
    assert _wait_gone("mcpspec-probe-run-a.") == [], "the proxy or the bridge is still running"
    assert not list(Path("/tmp").glob("mcpspec-probe-run-a.*")), "the launcher left its state directory"

    lines = audit.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["server"] == "probe" and record["agent"] == "tester" and record["run_id"] == "run-a"
    assert record["exit_status"] == 0 and record["run_dir"] == str(run_dir)
    assert {"from": "tmpfs", "to": "/workspace/tmp", "mode": "rw"} in record["mounts"]
    contacted = {(item["host"], item["port"], item["result"]) for item in record["egress_log"]}
    assert ("127.0.0.1", allowed.port, "allowed") in contacted
    assert ("127.0.0.2", denied.port, "refused") in contacted
    assert ("unlisted.test", 80, "refused") in contacted
    assert SECRET_ENV_VALUE not in lines[0] and SECRET_FILE_VALUE not in lines[0]
    assert SECRET_ENV_VALUE not in launcher.read_text(encoding="utf-8")


def test_denied_egress_reaches_nothing_and_gets_no_proxy(sandbox: Sandbox, listeners: tuple[_Listener, _Listener, _Listener]) -> None:
    allowed = listeners[0]
    spec = sandbox.spec("offline", "    env: {set: {PYTHONPATH: /opt/site}}\n    egress: {default: deny}\n    process: {deny: [tail, /usr/bin/id]}")
    launcher = sandbox.build(spec)
    assert not (launcher.parent / "probe.squid.conf").exists()
    got = call_tools(
        launcher,
        [
            ("connect", {"host": "127.0.0.1", "port": allowed.port}),
            ("environment", {}),
            ("http_get", {"url": f"http://127.0.0.1:{allowed.port}/"}),
            ("spawn", {"argv": ["tail", "--version"]}),
            ("spawn", {"argv": ["/usr/bin/id"]}),
            ("spawn", {"argv": ["head", "--version"]}),
        ],
        {"MCPSPEC_RUN_ID": "offline"},
    )
    assert got[0]["ok"] is False
    assert not {"HTTP_PROXY", "http_proxy"} & set(got[1]["env"])
    assert got[2]["ok"] is False
    assert got[3]["ok"] is False and got[4]["ok"] is False  # denied by name and by path
    assert got[5]["ok"] is True and got[5]["status"] == 0  # a command nobody denied
    assert _wait_gone(sandbox.base.name) == []


def test_a_workspace_dir_planted_as_a_symlink_is_refused(sandbox: Sandbox) -> None:
    spec = sandbox.spec("planted", "    env: {set: {PYTHONPATH: /opt/site}}")
    launcher = sandbox.build(spec)
    run_dir = sandbox.base / "ws-planted" / "tester" / "run-x"
    run_dir.mkdir(parents=True)
    (run_dir / "output").symlink_to(sandbox.base)
    done = subprocess.run([str(launcher)], env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "run-x"}, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 125
    assert "is a symbolic link" in done.stderr


def test_max_lifetime_stops_the_server_and_killing_the_launcher_leaves_nothing(sandbox: Sandbox) -> None:
    spec = sandbox.spec("lifetime", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {max_lifetime: 3s}\n    egress: {allow: [\"127.0.0.1:9\"]}")
    launcher = sandbox.build(spec)
    env = {"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "life"}
    started = time.monotonic()
    # stdin stays open (a client that never hangs up): only the lifetime ends the run.
    log = sandbox.base / "lifetime.stderr"
    with log.open("wb") as stderr:
        process = subprocess.Popen([str(launcher)], env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr)
        process.wait(timeout=30)
    elapsed = time.monotonic() - started
    assert process.stdin is not None
    process.stdin.close()
    assert 3 <= elapsed < 20
    record = json.loads(log.read_text(encoding="utf-8").strip().splitlines()[-1])
    assert record["event"] == "launch" and record["exit_status"] != 0
    assert _wait_gone(sandbox.base.name) == []

    process = subprocess.Popen([str(launcher)], env={**env, "MCPSPEC_RUN_ID": "killed"}, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not any("bwrap" in line for line in _leftovers(sandbox.base.name)):
        time.sleep(0.05)
    assert any("bwrap" in line for line in _leftovers(sandbox.base.name))
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    assert _wait_gone(sandbox.base.name) == [], "SIGKILL of the launcher left its sandbox running"
    assert _wait_gone("mcpspec-probe-killed.") == [], "SIGKILL of the launcher left its proxy or bridge running"
    # A launcher killed outright cannot remove its state directory (files only, nothing running).
    for leftover in Path("/tmp").glob("mcpspec-probe-killed.*"):
        shutil.rmtree(leftover)


def test_an_idle_session_ends_after_idle_timeout(sandbox: Sandbox) -> None:
    spec = sandbox.spec("idle", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {idle_timeout: 4s}")
    launcher = sandbox.build(spec)
    assert "'idle_seconds': 4," in launcher.read_text(encoding="utf-8")
    log = sandbox.base / "idle.stderr"
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "idle-test", "version": "1"}}}
    with log.open("wb") as stderr:
        process = subprocess.Popen([str(launcher)], env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "idle"}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((json.dumps(initialize) + "\n").encode())
        process.stdin.flush()
        reply = json.loads(process.stdout.readline())
        assert reply["id"] == 1 and "serverInfo" in reply["result"]
        answered = time.monotonic()
        # The client keeps stdin open and says nothing more: only the idle timeout ends the session.
        process.wait(timeout=30)
        idle = time.monotonic() - answered
        process.stdin.close()
        process.stdout.close()
    assert 3.5 <= idle < 15
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and '"event":"launch"' not in log.read_text(encoding="utf-8"):
        time.sleep(0.1)
    record = json.loads(log.read_text(encoding="utf-8").strip().splitlines()[-1])
    assert record["event"] == "launch" and record["run_id"] == "idle" and record["exit_status"] == 143
    assert _wait_gone(sandbox.base.name) == []


def test_a_listed_name_is_allowed_by_name_and_its_address_alone_is_not(sandbox: Sandbox) -> None:
    """The positive path of the name allowlist needs a public-looking address that is not the
    host's own (both are refused): two network namespaces made for the test (egress_lab.py), the
    launcher in one, the listener at 100.128.0.7 (public space just past the shared 100.64.0.0/10;
    documentation ranges are refused like private ones) in the other. No packet leaves them."""
    lab = make_lab()
    try:
        hosts = sandbox.base / "hosts-public"
        hosts.write_text(f"{FAR_V4} docs.example.org\n", encoding="utf-8")
        hosts.chmod(0o644)
        spec = sandbox.spec("named", f'    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    egress: {{allow: ["docs.example.org:{PORT}"]}}')
        launcher = sandbox.build(spec)
        wrapper = sandbox.base / "in-namespace.sh"
        # nsenter enters the network namespace alone: `ip netns exec` also mounts a sysfs of its own, without
        # the cgroup hierarchies the launcher makes the sandbox's cgroup in.
        wrapper.write_text(f"#!/bin/sh\nexec {' '.join(lab.enter())} {launcher}\n", encoding="utf-8")
        wrapper.chmod(0o755)
        got = call_tools(
            wrapper,
            [("http_get", {"url": f"http://docs.example.org:{PORT}/"}), ("http_get", {"url": f"http://{FAR_V4}:{PORT}/"}), ("http_get", {"url": f"http://docs.example.org:{PORT + 1}/"})],
            {"MCPSPEC_RUN_ID": "named", "MCPSPEC_EGRESS_HOSTS_FILE": str(hosts)},
        )
        assert got[0]["ok"] is True and got[0]["status"] == 200 and got[0]["body"] == "far-service"
        assert got[1]["status"] == 403  # the address is not what the spec lists
        assert got[2]["status"] == 403  # the name on a port the spec does not list
    finally:
        lab.close()
    assert _wait_gone(sandbox.base.name) == []
