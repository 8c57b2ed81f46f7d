"""The red team's attacks on the bubblewrap launcher, each run for real and expected to fail.

Every test starts generated launchers as root with the `mcp` SDK probe server inside
and plays the attacker: the hostile server, the hostile environment of the launcher,
or signals at every moment of the start. Network: loopback only.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_tool

sys.path.insert(0, str(Path(__file__).parent / "probe"))
import contextlib

from harness import Listener, Sandbox, call_tools, leftovers, sandbox_python_matches, wait_gone

SECRET_ENV_VALUE = "tok-attack-51c9e0"
SECRET_FILE_VALUE = "file-attack-2be7d4"
ROOT_ONLY_VALUE = "root-only-8f31aa"
EACCES, ENOENT, EROFS, ENOSPC = 13, 2, 30, 28


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    for tool in ("bwrap", "socat", "squid"):
        require_tool(tool)
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("the launcher's attacks are run as root, as MCP clients on servers run launchers (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("the launcher's attacks are run as root")
    if not sandbox_python_matches():
        pytest.fail("/usr/bin/python3 must be the same minor version as the test interpreter (the probe server runs on it)")
    box = Sandbox()
    yield box
    box.cleanup()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    item = Listener("127.0.0.1")
    yield item
    item.close()


def _root_only(box: Sandbox, name: str) -> Path:
    path = box.base / name
    path.write_text(ROOT_ONLY_VALUE, encoding="utf-8")
    path.chmod(0o600)
    return path


def _sandbox_writable_dir(box: Sandbox, name: str) -> Path:
    path = box.base / name
    path.mkdir()
    os.chown(path, 65532, 65532)
    return path


def _run(launcher: Path, env: dict[str, str], stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(launcher)], input=stdin, capture_output=True, timeout=timeout, check=False, env={"PATH": os.environ["PATH"], **env})


def _audit_lines(stderr: bytes) -> list[dict[str, object]]:
    """The audit lines in a stderr the server shares (its output may run into a line's start)."""
    text = stderr.decode("utf-8", "replace")
    return [json.loads(line[line.index('{"event"'):]) for line in text.splitlines() if '{"event"' in line]


def _jsonrpc(*messages: dict[str, object]) -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "attack", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(request_id: int, tool: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def _host_processes(marker: str) -> dict[int, str]:
    found = {}
    for line in leftovers(marker):
        pid, _, cmdline = line.partition(": ")
        found[int(pid)] = cmdline
    return found


def _environ(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _fd_targets(pid: int) -> list[str]:
    targets = []
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                targets.append(os.readlink(f"/proc/{pid}/fd/{name}"))
    except OSError:
        pass
    return targets


def test_nothing_of_the_host_reaches_the_server_through_descriptors_environ_or_cmdlines(sandbox: Sandbox, listener: Listener) -> None:
    """Items 1 and 9: an inherited descriptor to a root-only file, the launcher's environment
    (which holds the env secret's source), and squid/socat holding secrets."""
    base = sandbox.base
    root_only = _root_only(sandbox, "fd-root-only")
    secret_file = base / "fd-secret"
    secret_file.write_text(SECRET_FILE_VALUE, encoding="utf-8")
    secret_file.chmod(0o600)
    spec = sandbox.spec(
        "fds",
        f"""    env: {{set: {{PYTHONPATH: /opt/site}}}}
    secrets:
      - {{use: token, as: {{env: PROBE_TOKEN}}}}
      - {{use: keyfile, as: {{file: /run/secrets/key}}}}
    egress: {{allow: ["127.0.0.1:{listener.port}"]}}""",
        extra=f"""secrets:
  token: {{provider: env, ref: ATTACK_TOKEN_SOURCE}}
  keyfile: {{provider: file, ref: {secret_file}}}""",
    )
    launcher = sandbox.build(spec)
    wrapper = base / "with-fd-7.sh"
    wrapper.write_text(f"#!/bin/bash\nexec 7<{root_only} 9<{secret_file}\nexec {launcher}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    seen: dict[int, tuple[str, str, list[str]]] = {}

    def watch_host() -> None:
        for _ in range(30):
            for pid, cmdline in {**_host_processes("mcpspec-probe-fds."), **_host_processes(sandbox.marker)}.items():
                seen[pid] = (cmdline, _environ(pid), _fd_targets(pid))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch_host)
    watcher.start()
    got = call_tools(
        wrapper,
        [("descriptors", {}), ("read_path", {"path": "/proc/self/fd/7"}), ("read_path", {"path": "/proc/1/fd/7"}),
         ("read_path", {"path": "/proc/1/cmdline"}), ("cmdlines", {}), ("environment", {}),
         ("http_get", {"url": f"http://127.0.0.1:{listener.port}/"}), ("pause", {"seconds": 2.0})],
        {"ATTACK_TOKEN_SOURCE": SECRET_ENV_VALUE, "MCPSPEC_RUN_ID": "fds", "HOME": "/root"},
    )
    watcher.join()
    targets = got[0]["fds"]
    assert not any(str(root_only) in target or str(secret_file) in target for target in targets.values()), targets
    assert got[1]["ok"] is False and got[2]["ok"] is False
    # The server is the sandbox's pid 1 (no bwrap process inside), and no visible command line names a host path.
    assert got[3]["data"].split("\0")[:2] == ["/usr/bin/python3", "/probe/probe_server.py"]
    for cmdline in got[4]["cmdlines"].values():
        assert str(base) not in cmdline and SECRET_ENV_VALUE not in cmdline and SECRET_FILE_VALUE not in cmdline, cmdline
    assert got[5]["env"]["PROBE_TOKEN"] == SECRET_ENV_VALUE  # the secret is where the spec puts it
    assert got[6]["status"] == 200  # the proxy was in use while the host was watched
    helpers = {pid: item for pid, item in seen.items() if "squid" in item[0] or "socat" in item[0]}
    assert any("squid" in item[0] for item in helpers.values()) and any("socat" in item[0] for item in helpers.values()), seen
    for pid, (cmdline, environ, fds) in seen.items():
        is_server = cmdline.startswith("/usr/bin/python3 /probe/")  # holds PROBE_TOKEN, as the spec says
        for text in (cmdline, *fds, *([] if is_server else [environ])):
            assert SECRET_ENV_VALUE not in text and SECRET_FILE_VALUE not in text, (pid, cmdline)
        assert not any(str(root_only) in target for target in fds), (pid, cmdline, fds)
    # No descriptor inside names a host path: a host directory's descriptor is a way out through "..".
    # (0-2 are the client's own stdio, handed on by design.)
    for where, target in targets.items():
        if where.rpartition("/")[2] not in ("0", "1", "2"):
            assert str(base) not in target and not target.startswith("/tmp/mcpspec"), (where, target)
    for pid, (cmdline, environ, fds) in helpers.items():
        assert "ATTACK_TOKEN_SOURCE" not in environ, (pid, cmdline)
        assert not any(target.startswith("/memfd:") for target in fds), (pid, cmdline, fds)
    assert wait_gone(sandbox.marker) == []


def _uid_of(pid: str) -> int:
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except OSError:
        return -1


def test_uid_0_in_the_spec_is_an_unprivileged_uid_on_the_host(sandbox: Sandbox) -> None:
    """Item 6: runtime.user 0 read root-only files in its mounts and ignored its pids limit (45 of 8)."""
    rootdir = sandbox.base / "rootdir"
    rootdir.mkdir()
    rootdir.chmod(0o755)
    (rootdir / "shadow").write_text(ROOT_ONLY_VALUE, encoding="utf-8")
    (rootdir / "shadow").chmod(0o600)
    # SP004 (critical) says root inside is a risk; the spec's author waives it, and the launcher must hold anyway.
    waiver = "waivers:\n  - {rule: SP004, at: servers.probe.runtime.user, reason: attack test, expires: 2099-01-01}"
    # RLIMIT_NPROC counts every process of the host uid (65532 stands in for uid 0), zombies of
    # earlier sandboxes included: the limit is set that far above what already runs.
    already = sum(1 for entry in os.listdir("/proc") if entry.isdigit() and _uid_of(entry) == 65532)
    spec = sandbox.spec("uid0", f"    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    runtime: {{user: 0, pids: {already + 16}}}", extra=waiver)
    text = spec.read_text(encoding="utf-8").replace("      - {from: workspace.input", f"      - {{from: {rootdir}, to: /rootdir}}\n      - {{from: workspace.input", 1)
    spec.write_text(text, encoding="utf-8")
    launcher = sandbox.build(spec)
    got = call_tools(launcher, [("identity", {}), ("read_path", {"path": "/rootdir/shadow"}), ("fork_many", {"count": 40})], {"MCPSPEC_RUN_ID": "uid0"})
    assert got[0]["uid"] == 0 and got[0]["euid"] == 0  # what the spec asked for, inside
    assert all(int(value, 16) == 0 for value in got[0]["caps"].values()), got[0]["caps"]
    assert got[1]["ok"] is False and got[1]["errno"] == EACCES
    assert got[2]["started"] < 16 and got[2]["error"] == "BlockingIOError"  # 40 asked for


def test_the_root_and_every_tmpfs_are_bounded_and_read_only_means_read_only(sandbox: Sandbox) -> None:
    """Item 7: writes to /, an unbounded /dev/shm, and a writable `mode: ro, tmpfs: true` dir."""
    spec = sandbox.spec(
        "bounded",
        "    env: {set: {PYTHONPATH: /opt/site}}\n    runtime: {memory: 512Mi}",
        dirs="    frozen: {mode: ro, tmpfs: true, size: 8Mi}",
    )
    text = spec.read_text(encoding="utf-8").replace("      - {from: workspace.tmp, to: /workspace/tmp}", "      - {from: workspace.tmp, to: /workspace/tmp}\n      - {from: workspace.frozen, to: /workspace/frozen}")
    spec.write_text(text, encoding="utf-8")
    launcher = sandbox.build(spec)
    got = call_tools(
        launcher,
        [("write_path", {"path": "/evil", "data": "x"}), ("write_path", {"path": "/etc/evil", "data": "x"}),
         ("write_bytes", {"path": "/dev/shm/fill", "megabytes": 64}), ("write_bytes", {"path": "/tmp/fill", "megabytes": 100}),
         ("write_bytes", {"path": "/workspace/tmp/fill", "megabytes": 32}), ("write_path", {"path": "/workspace/frozen/x", "data": "x"})],
        {"MCPSPEC_RUN_ID": "bounded"},
    )
    assert got[0]["errno"] == EROFS and got[1]["errno"] == EROFS
    assert got[2]["ok"] is False and got[2]["errno"] == ENOSPC and got[2]["written"] <= 16
    assert got[3]["ok"] is False and got[3]["errno"] == ENOSPC and got[3]["written"] <= 64
    assert got[4]["ok"] is False and got[4]["errno"] == ENOSPC and got[4]["written"] <= 16
    assert got[5]["ok"] is False and got[5]["errno"] == EROFS


def test_links_planted_in_writable_mounts_lead_root_nowhere(sandbox: Sandbox) -> None:
    """Item 4: a file secret's source inside a mount the server may write (SE008 says so; the launcher holds anyway)."""
    target = _root_only(sandbox, "links-target")
    secrets_dir = _sandbox_writable_dir(sandbox, "links-secrets")
    (secrets_dir / "tok").write_text(SECRET_FILE_VALUE, encoding="utf-8")
    spec = sandbox.spec(
        "links",
        """    env: {set: {PYTHONPATH: /opt/site}}
    secrets:
      - {use: keyfile, as: {file: /run/secrets/key}}
    logging: {audit: true, sink: stderr}""",
        extra=f"""secrets:
  keyfile: {{provider: file, ref: {secrets_dir}/tok}}""",
    )
    text = spec.read_text(encoding="utf-8").replace("      - {from: workspace.input", f"      - {{from: {secrets_dir}, to: /secrets, mode: rw}}\n      - {{from: workspace.input", 1)
    spec.write_text(text, encoding="utf-8")
    launcher = sandbox.build(spec, accept=("SE008",))
    got = call_tools(launcher, [("read_path", {"path": "/run/secrets/key"}), ("replace_with_symlink", {"path": "/secrets/tok", "target": str(target)})],
                     {"MCPSPEC_RUN_ID": "links-1"})
    assert got[0] == {"ok": True, "data": SECRET_FILE_VALUE} and got[1] == {"ok": True}
    again = _run(launcher, {"MCPSPEC_RUN_ID": "links-2"})
    assert again.returncode == 125 and b"secret keyfile" in again.stderr and b"symbolic link" in again.stderr, again.stderr
    # A hard link (the sandbox cannot make one to a root file while fs.protected_hardlinks is on; root can).
    (secrets_dir / "tok").unlink()
    os.link(target, secrets_dir / "tok")
    again = _run(launcher, {"MCPSPEC_RUN_ID": "links-3"})
    assert again.returncode == 125 and b"links" in again.stderr, again.stderr
    assert [record["ended_by"] for record in _audit_lines(again.stderr)] == ["refused"]
    assert target.read_text(encoding="utf-8") == ROOT_ONLY_VALUE and target.stat().st_uid == 0
    assert not list(sandbox.base.glob("ws-links/tester/links-[23]/*")), "a refused launch prepared workspace directories"


def test_an_audit_sink_a_sandbox_could_swap_is_refused(sandbox: Sandbox) -> None:
    """Item 4: the audit sink in a writable mount: root appended to whatever the server put there."""
    target = _root_only(sandbox, "sink-target")
    logs = _sandbox_writable_dir(sandbox, "sink-logs")
    spec = sandbox.spec("sink", f"    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    logging: {{audit: true, sink: {logs}/audit.jsonl}}")
    text = spec.read_text(encoding="utf-8").replace("      - {from: workspace.input", f"      - {{from: {logs}, to: /logs, mode: rw}}\n      - {{from: workspace.input", 1)
    spec.write_text(text, encoding="utf-8")
    launcher = sandbox.build(spec, accept=("LG005",))
    refused = _run(launcher, {"MCPSPEC_RUN_ID": "sink-1"})
    assert refused.returncode == 125 and b"another user can write to its directory" in refused.stderr, refused.stderr
    # The directory is root's again, but the server left its own file, or a link, as the sink.
    os.chown(logs, 0, 0)
    logs.chmod(0o755)
    for plant in ("file", "link"):
        sink = logs / "audit.jsonl"
        sink.unlink(missing_ok=True)
        if plant == "file":
            sink.write_text('{"event":"launch","exit_status":0}\n', encoding="utf-8")
            os.chown(sink, 65532, 65532)
        else:
            sink.symlink_to(target)
        refused = _run(launcher, {"MCPSPEC_RUN_ID": f"sink-{plant}"})
        assert refused.returncode == 125 and b"refusing" in refused.stderr, (plant, refused.stderr)
    assert target.read_text(encoding="utf-8") == ROOT_ONLY_VALUE
    (logs / "audit.jsonl").unlink()
    done = _run(launcher, {"MCPSPEC_RUN_ID": "sink-ok"}, _jsonrpc(INITIALIZE))
    record = json.loads((logs / "audit.jsonl").read_text(encoding="utf-8"))
    assert record["run_id"] == "sink-ok" and (logs / "audit.jsonl").stat().st_uid == 0, done.stderr


def test_a_workspace_root_the_server_can_write_gives_it_nothing_to_race(sandbox: Sandbox) -> None:
    """Item 4: a server with the workspace root mounted writable raced mkdir/chown of a new run dir."""
    target = _root_only(sandbox, "race-target")
    spec = sandbox.spec("race", "    env: {set: {PYTHONPATH: /opt/site}}")
    root = sandbox.base / "ws-race"
    root.mkdir(mode=0o711)  # the operator made it; the server gets it writable by mistake
    text = spec.read_text(encoding="utf-8").replace("      - {from: workspace.input", f"      - {{from: {root}, to: /wsroot, mode: rw}}\n      - {{from: workspace.input", 1)
    spec.write_text(text, encoding="utf-8")
    launcher = sandbox.build(spec, accept=("FS003",))
    got = call_tools(
        launcher,
        [("make_dir", {"path": "/wsroot/tester/next"}), ("replace_with_symlink", {"path": "/wsroot/tester/race-2", "target": str(target)}),
         ("write_path", {"path": "/wsroot/planted", "data": "x"}), ("list_dir", {"path": "/wsroot/tester"})],
        {"MCPSPEC_RUN_ID": "race-1"},
    )
    assert got[0]["errno"] == EACCES and got[1]["errno"] == EACCES and got[2]["errno"] == EACCES
    for directory in (root, root / "tester", root / "tester" / "race-1"):
        info = directory.stat()
        assert info.st_uid == 0 and not info.st_mode & 0o022, directory
    assert (root / "tester" / "race-1" / "output").stat().st_uid == 65532
    second = call_tools(launcher, [("list_dir", {"path": "/workspace"})], {"MCPSPEC_RUN_ID": "race-2"})
    assert second[0]["entries"] == ["input", "output", "tmp"]
    assert target.stat().st_uid == 0 and target.read_text(encoding="utf-8") == ROOT_ONLY_VALUE
    # A workspace root someone else can write to is refused outright.
    root.chmod(0o1777)
    refused = _run(launcher, {"MCPSPEC_RUN_ID": "race-3"})
    root.chmod(0o711)
    assert refused.returncode == 125 and b"another user can write" in refused.stderr


def test_failures_exit_125_with_a_message_and_an_audit_line(sandbox: Sandbox) -> None:
    """Item 8: a file secret whose source is a directory, and squid failing to start, exited 0."""
    folder = sandbox.base / "a-directory"
    folder.mkdir()
    spec = sandbox.spec(
        "fail", "    env: {set: {PYTHONPATH: /opt/site}}\n    secrets: [{use: keyfile, as: {file: /run/secrets/key}}]\n    logging: {audit: true, sink: stderr}",
        extra=f"secrets:\n  keyfile: {{provider: file, ref: {folder}}}")
    launcher = sandbox.build(spec)
    done = _run(launcher, {"MCPSPEC_RUN_ID": "fail-1"}, _jsonrpc(INITIALIZE))
    assert done.returncode == 125 and b"not a regular file" in done.stderr, done.stderr
    assert [record["exit_status"] for record in _audit_lines(done.stderr)] == [125]

    spec = sandbox.spec("noproxy", '    env: {set: {PYTHONPATH: /opt/site}}\n    egress: {allow: ["127.0.0.1:9"]}\n    logging: {audit: true, sink: stderr}')
    launcher = sandbox.build(spec)
    conf = launcher.with_name("probe.squid.conf")
    conf.write_text(conf.read_text(encoding="utf-8") + "this_is_not_a_squid_directive on\n", encoding="utf-8")
    done = _run(launcher, {"MCPSPEC_RUN_ID": "fail-2"}, _jsonrpc(INITIALIZE))
    assert done.returncode == 125 and b"squid" in done.stderr, done.stderr
    records = _audit_lines(done.stderr)
    assert [record["exit_status"] for record in records] == [125] and "squid" in str(records[0]["error"])
    assert wait_gone(sandbox.marker) == [] and wait_gone("mcpspec-probe-fail-2.") == []


def _start(launcher: Path, run_id: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(launcher)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": run_id, **(extra_env or {})})


def _eof_within(stream: object, seconds: float) -> bool:
    """Whether every writer of a pipe is gone (the reader sees end-of-file) within ``seconds``."""
    done = threading.Event()

    def read() -> None:
        assert hasattr(stream, "read")
        stream.read()
        done.set()

    threading.Thread(target=read, daemon=True).start()
    return done.wait(seconds)


def _squid_segments() -> int:
    return sum(1 for name in os.listdir("/dev/shm") if name.startswith("mcpspec"))


MOMENTS = (0.0, 0.01, 0.03, 0.06, 0.1, 0.14, 0.18, 0.22, 0.26, 0.3, 0.34, 0.38, 0.42, 0.46, 0.5, 0.6, 0.8, 1.0, 1.5)


def test_sigkill_of_the_launcher_at_any_moment_of_the_start_leaves_nothing_running(sandbox: Sandbox, listener: Listener) -> None:
    """Item 5: a SIGKILL during the start left the server running, reparented to PID 1."""
    spec = sandbox.spec("sigkill", f'    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    egress: {{allow: ["127.0.0.1:{listener.port}"]}}\n    lifecycle: {{idle_timeout: 1m}}')
    launcher = sandbox.build(spec)
    segments = _squid_segments()
    for index, moment in enumerate(MOMENTS):
        run_id = f"kill-{index}"
        process = _start(launcher, run_id)
        time.sleep(moment)
        process.kill()
        process.wait(timeout=10)
        assert _eof_within(process.stdout, 10), f"SIGKILL after {moment}s: something still holds the client's stdout"
        left = wait_gone(sandbox.marker) + wait_gone(f"mcpspec-probe-{run_id}.")
        assert left == [], f"SIGKILL after {moment}s left {left}"
        assert process.stdin is not None
        process.stdin.close()
        # The guardian also removes what the launcher would have: the proxy's state and shared memory.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and list(Path("/tmp").glob(f"mcpspec-probe-{run_id}.*")):
            time.sleep(0.05)
        assert not list(Path("/tmp").glob(f"mcpspec-probe-{run_id}.*")), f"SIGKILL after {moment}s left the proxy's state directory"
    assert _squid_segments() <= segments, "killed launchers left squid's shared memory in /dev/shm"


FAKE_BWRAP = """#!/usr/bin/python3
import os, sys, time
# Stands in for bwrap between its clone and its report: a child exists (with no parent-death
# signal of its own yet) and nobody has been told its pid.
if os.fork() == 0:
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", "MARKER"])
time.sleep(120)
"""


def test_a_launcher_killed_before_bwrap_reports_its_child_leaves_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    """Seen in CI under load: a SIGKILL of the launcher 0.26 s into the start left bwrap's child
    (the sandbox's pid 1 to be) blocked forever. bwrap's child arms its parent-death signal a moment
    after it exists and bwrap reports its pid later still; a launcher killed in between took bwrap
    with it (its parent-death signal) and left the child reported to nobody. A stand-in bwrap,
    bound over the real one in a mount namespace of the test's own, holds that moment open."""
    require_tool("unshare")
    marker = f"mcpspec-unreported-{os.getpid()}"
    fake = tmp_path / "bwrap"
    fake.write_text(FAKE_BWRAP.replace("MARKER", marker), encoding="utf-8")
    fake.chmod(0o755)
    real = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True, text=True, check=True).stdout.strip()
    launcher = sandbox.build(sandbox.spec("unreported", "    env: {set: {PYTHONPATH: /opt/site}}"))
    script = 'mount --bind "$1" "$2" && exec "$3"'
    process = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(fake), real, str(launcher)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "unreported"})
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not leftovers(marker):
            time.sleep(0.02)
        assert leftovers(marker), "the stand-in bwrap never started its child"
        process.kill()
        process.wait(timeout=10)
        assert wait_gone(marker) == [], "a child bwrap never reported outlived the killed launcher"
    finally:
        for line in leftovers(marker):
            with contextlib.suppress(OSError):
                os.kill(int(line.split(":")[0]), signal.SIGKILL)


def _died_starting_python(returncode: int | None, signum: int, stderr: bytes) -> bool:
    """Whether the launcher ended of the signal before its first line ran: the default action, or
    (SIGINT, which Python's start-up turns into KeyboardInterrupt) status 1 with that traceback."""
    if returncode == -signum:
        return not stderr or stderr.rstrip().endswith(b"KeyboardInterrupt")
    return signum == signal.SIGINT and returncode == 1 and stderr.rstrip().endswith(b"KeyboardInterrupt") and b'{"event"' not in stderr


def test_a_sigint_python_took_while_starting_still_stops_the_launcher(sandbox: Sandbox) -> None:
    """Seen under load: a SIGINT in Python's own start-up became KeyboardInterrupt, which its check
    of argv[0] printed ("Failed checking if argv[0] is an import path entry") and dropped, and the
    launcher then ran the server as if no signal had come. The exception stays in sys.last_value;
    a wrapper leaves it there as that check does and runs the launcher as the script."""
    launcher = sandbox.build(sandbox.spec("took", "    env: {set: {PYTHONPATH: /opt/site}}\n    logging: {audit: true, sink: stderr}"))
    wrapper = "import runpy, sys\nsys.last_value = KeyboardInterrupt()\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    done = subprocess.run(["/usr/bin/python3", "-IS", "-c", wrapper, str(launcher)], input=b"", capture_output=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "took"}, check=False)
    records = _audit_lines(done.stderr)
    assert done.returncode == 128 + signal.SIGINT, done.stderr.decode("utf-8", "replace")
    assert len(records) == 1 and records[0]["ended_by"] == "signal", records
    assert wait_gone(sandbox.marker) == []


def test_sigterm_at_any_moment_stops_everything_and_still_audits(sandbox: Sandbox, listener: Listener) -> None:
    spec = sandbox.spec("sigterm", f'    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    egress: {{allow: ["127.0.0.1:{listener.port}"]}}\n    logging: {{audit: true, sink: stderr}}')
    launcher = sandbox.build(spec)
    for index, moment in enumerate(MOMENTS[::2]):
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            run_id = f"term-{index}-{int(signum)}"
            process = _start(launcher, run_id)
            time.sleep(moment)
            process.send_signal(signum)
            _out, err = process.communicate(timeout=20)
            records = _audit_lines(err)
            seen = (moment, signum, process.returncode, err.decode("utf-8", "replace"))
            if _died_starting_python(process.returncode, signum, err):
                # Python had not run the launcher's first line (how long that takes depends on the
                # machine's load, not on the moment): then nothing was started at all.
                assert not records, seen
            else:
                assert process.returncode == 128 + signum, seen
                assert len(records) == 1 and records[0]["exit_status"] == 128 + signum, seen
            assert wait_gone(sandbox.marker) == [] and wait_gone(f"mcpspec-probe-{run_id}.") == []
            assert not list(Path("/tmp").glob(f"mcpspec-probe-{run_id}.*")), "the state directory was left behind"


def test_the_cpu_budget_counts_every_process_of_the_sandbox(sandbox: Sandbox) -> None:
    """Item 9: RLIMIT_CPU is per process; four busy processes used three times the budget."""
    spec = sandbox.spec("cpu", "    env: {set: {PYTHONPATH: /opt/site}}\n    runtime: {cpus: 0.2}\n    lifecycle: {max_lifetime: 60s}\n    logging: {audit: true, sink: stderr}")
    launcher = sandbox.build(spec)  # budget: 0.2 x 60 s = 12 CPU-seconds for the whole sandbox (the SDK's start takes 2-3)
    started = time.monotonic()
    process = _start(launcher, "cpu")
    assert process.stdin is not None and process.stderr is not None
    process.stdin.write(_jsonrpc(INITIALIZE, INITIALIZED, _call(2, "burn", {"processes": 4, "seconds": 50})))
    process.stdin.flush()  # and the client stays connected
    process.wait(timeout=30)
    err = process.stderr.read()
    process.stdin.close()
    elapsed = time.monotonic() - started
    records = _audit_lines(err)
    assert records and records[-1]["ended_by"] == "cpu_budget", err[-800:]
    assert process.returncode == 128 + signal.SIGXCPU
    # Four busy processes: each stays below the per-process limit (12 s) long after together they pass 12 s.
    assert elapsed < 45, "the budget of the whole sandbox was not enforced"


def test_idle_timeout_spares_a_call_in_progress_and_ends_an_idle_session(sandbox: Sandbox) -> None:
    spec = sandbox.spec("idlecall", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {idle_timeout: 2s}\n    logging: {audit: true, sink: stderr}")
    launcher = sandbox.build(spec)
    process = _start(launcher, "idlecall")
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_jsonrpc(INITIALIZE))
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1
    process.stdin.write(_jsonrpc(INITIALIZED, _call(2, "pause", {"seconds": 4})))
    process.stdin.flush()
    reply = json.loads(process.stdout.readline())  # four silent seconds: twice the idle timeout
    assert reply["id"] == 2 and "slept" in reply["result"]["content"][0]["text"]
    answered = time.monotonic()
    process.wait(timeout=20)
    assert 1.5 <= time.monotonic() - answered < 8
    records = _audit_lines(process.stderr.read() if process.stderr else b"")
    assert records[-1]["ended_by"] == "idle_timeout" and process.returncode == 143
    assert _eof_within(process.stdout, 3)
    process.stdin.close()


def test_after_max_lifetime_nothing_holds_the_client_output(sandbox: Sandbox) -> None:
    """Item 9: the watchdog's sleep outlived the launcher and held the client's stdout open."""
    spec = sandbox.spec("holdout", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {max_lifetime: 2s}")
    launcher = sandbox.build(spec)
    process = _start(launcher, "holdout")
    process.wait(timeout=20)
    assert _eof_within(process.stdout, 2) and _eof_within(process.stderr, 2)
    assert process.stdin is not None
    process.stdin.close()


def test_the_audit_line_is_json_whatever_the_workspace_root_holds(sandbox: Sandbox) -> None:
    """Item 9: a workspace.root with `"` or `\\` made the audit line invalid JSON."""
    spec = sandbox.spec("quotes", "    env: {set: {PYTHONPATH: /opt/site}}\n    logging: {audit: true, sink: stderr}")
    odd_root = f"{sandbox.base}/ws \"q\" back\\slash"
    text = spec.read_text(encoding="utf-8").replace(f"  root: {sandbox.base}/ws-quotes", f"  root: {json.dumps(odd_root)}")
    spec.write_text(text, encoding="utf-8")
    launcher = sandbox.build(spec)
    done = _run(launcher, {"MCPSPEC_RUN_ID": "quotes"}, _jsonrpc(INITIALIZE))
    records = _audit_lines(done.stderr)
    assert len(records) == 1 and records[0]["run_dir"] == f"{odd_root}/tester/quotes", done.stderr[-500:]


def test_a_listener_inside_the_sandbox_is_unreachable_from_the_host(sandbox: Sandbox) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # With egress (and so inet sockets: without it the syscall filter refuses them), listeners: false.
    spec = sandbox.spec("listen", '    env: {set: {PYTHONPATH: /opt/site}}\n    egress: {allow: ["127.0.0.1:9"]}')
    launcher = sandbox.build(spec)
    reached: list[bool] = []

    def try_from_host() -> None:
        time.sleep(3)  # the server is listening by now (its call returns before the pause)
        with socket.socket() as client:
            client.settimeout(2)
            reached.append(client.connect_ex(("127.0.0.1", port)) == 0)

    attempt = threading.Thread(target=try_from_host)
    attempt.start()
    got = call_tools(launcher, [("listen", {"port": port}), ("pause", {"seconds": 5}), ("connect", {"host": "127.0.0.1", "port": port})], {"MCPSPEC_RUN_ID": "listen"})
    attempt.join()
    assert got[0] == {"ok": True} and got[2]["ok"] is True  # the listener is real, inside
    assert reached == [False]


def test_no_other_sandbox_can_reach_the_egress_socket(sandbox: Sandbox, listener: Listener) -> None:
    """Item 9: another sandbox of the same uid could use this sandbox's egress socket."""
    spec = sandbox.spec("owner", f'    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    egress: {{allow: ["127.0.0.1:{listener.port}"]}}')
    owner = sandbox.build(spec)
    spec = sandbox.spec("intruder", "    env: {set: {PYTHONPATH: /opt/site}}")
    text = spec.read_text(encoding="utf-8").replace("      - {from: workspace.input", "      - {from: /tmp, to: /hosttmp}\n      - {from: workspace.input", 1)
    spec.write_text(text, encoding="utf-8")
    intruder = sandbox.build(spec, accept=("FS003",))
    result: dict[str, object] = {}
    session = threading.Thread(target=lambda: result.update(got=call_tools(owner, [("pause", {"seconds": 5}), ("http_get", {"url": f"http://127.0.0.1:{listener.port}/"})], {"MCPSPEC_RUN_ID": "owner"})))
    session.start()
    deadline = time.monotonic() + 15
    state: list[Path] = []
    while time.monotonic() < deadline and not state:
        state = list(Path("/tmp").glob("mcpspec-probe-owner.*"))
        time.sleep(0.05)
    assert state
    time.sleep(2)  # the owner's sandbox is up and in its silent call
    sockets = [path for path in state[0].rglob("*") if path.is_socket()]
    assert sockets == [], "the egress socket still has a path on the host"
    assert stat.S_IMODE(state[0].stat().st_mode) == 0o711 and state[0].stat().st_uid == 0
    got = call_tools(intruder, [("list_dir", {"path": f"/hosttmp/{state[0].name}"})], {"MCPSPEC_RUN_ID": "intruder"})
    assert got[0]["ok"] is False and got[0]["errno"] == EACCES
    session.join(30)
    answers = result["got"]
    assert isinstance(answers, list) and answers[1]["status"] == 200  # the owner's own path still works


def test_an_unprivileged_user_runs_the_same_launcher_with_its_own_uid(sandbox: Sandbox, listener: Listener) -> None:
    """Not root: no identity change, the proxy runs as the same user, and every boundary still holds."""
    setpriv = require_tool("setpriv")
    user_dir = sandbox.base / "user-65533"
    user_dir.mkdir()
    os.chown(user_dir, 65533, 65533)
    spec = sandbox.spec("user", f'    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    egress: {{allow: ["127.0.0.1:{listener.port}"]}}')
    spec.write_text(spec.read_text(encoding="utf-8").replace(f"  root: {sandbox.base}/ws-user", f"  root: {user_dir}/ws"), encoding="utf-8")
    launcher = sandbox.build(spec)
    wrapper = sandbox.base / "as-65533.sh"
    wrapper.write_text(f"#!/bin/sh\nexec {setpriv} --reuid=65533 --regid=65533 --clear-groups {launcher}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    got = call_tools(wrapper, [("identity", {}), ("http_get", {"url": f"http://127.0.0.1:{listener.port}/"}), ("read_path", {"path": "/proc/1/cmdline"}),
                               ("write_path", {"path": "/workspace/output/x", "data": "y"})], {"MCPSPEC_RUN_ID": "user"})
    assert got[0]["uid"] == 65532 and all(int(value, 16) == 0 for value in got[0]["caps"].values())
    assert got[1]["status"] == 200 and got[3] == {"ok": True}
    written = user_dir / "ws" / "tester" / "user" / "output" / "x"
    assert written.read_text(encoding="utf-8") == "y" and written.stat().st_uid == 65533
    assert wait_gone(sandbox.marker) == [] and wait_gone("mcpspec-probe-user.") == []


def test_a_hostile_spec_file_name_adds_nothing_to_the_launcher_or_the_proxy(sandbox: Sandbox, listener: Listener) -> None:
    """Item 2: a spec saved under a name with newlines ran a line as root and opened the proxy."""
    plain = sandbox.spec("named-plain", f'    env: {{set: {{PYTHONPATH: /opt/site}}}}\n    egress: {{allow: ["127.0.0.1:{listener.port}"]}}')
    hostile = plain.with_name("x\ntouch PWNED\nhttp_access allow all\n#.yaml")
    hostile.write_text(plain.read_text(encoding="utf-8"), encoding="utf-8")
    launcher = sandbox.build(hostile)
    conf = launcher.with_name("probe.squid.conf").read_text(encoding="utf-8")
    assert "http_access allow all" not in [line.strip() for line in conf.splitlines()]
    got = call_tools(
        launcher,
        [("http_get", {"url": f"http://127.0.0.1:{listener.port}/"}), ("http_get", {"url": f"http://127.0.0.1:{listener.port + 1}/"}),
         ("http_get", {"url": "http://unlisted.test/"})],
        {"MCPSPEC_RUN_ID": "hostile-name"},
    )
    assert got[0]["status"] == 200 and got[1]["status"] == 403 and got[2]["status"] == 403
    assert not list(sandbox.base.rglob("PWNED")) and not Path("PWNED").exists()


def test_the_unspecified_and_mapped_forms_of_loopback_do_not_reach_a_host_service(sandbox: Sandbox) -> None:
    """Item 3: `[::]:PORT` through the proxy reached a host service bound to ::1."""
    v6 = Listener("::1")
    port = v6.port
    v4 = Listener("127.0.0.1", port)
    try:
        waivers = "waivers:\n" + "".join(
            f"  - {{rule: {rule}, at: servers.probe.egress.default, reason: attack test, expires: 2099-01-01}}\n" for rule in ("NW001", "NW002"))
        spec = sandbox.spec("unspecified", "    env: {set: {PYTHONPATH: /opt/site}}\n    egress: {default: allow, via: proxy}", extra=waivers)
        launcher = sandbox.build(spec)
        forms = [f"http://[::]:{port}/", f"http://[::1]:{port}/", f"http://[::ffff:127.0.0.1]:{port}/", f"http://[::ffff:7f00:1]:{port}/",
                 f"http://0.0.0.0:{port}/", f"http://127.0.0.1:{port}/", f"http://127.1:{port}/", f"http://2130706433:{port}/",
                 f"http://0x7f000001:{port}/", f"http://[::127.0.0.1]:{port}/", f"http://[64:ff9b::7f00:1]:{port}/"]
        got = call_tools(launcher, [("http_get", {"url": url}) for url in forms], {"MCPSPEC_RUN_ID": "unspecified"})
        for url, result in zip(forms, got, strict=True):
            assert result.get("body") != "reached" and (result.get("status") in (400, 403) or result["ok"] is False), (url, result)
    finally:
        v6.close()
        v4.close()



def test_a_flooding_server_cannot_grow_the_root_launcher(sandbox: Sandbox) -> None:
    """Red team: with an idle timeout the launcher relays the stdio; a client that does not read let a
    server grow the root launcher without bound (91-117 MiB)."""
    spec = sandbox.spec("flood", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {idle_timeout: 1m}")
    launcher = sandbox.build(spec)
    process = _start(launcher, "flood")
    assert process.stdin is not None
    process.stdin.write(_jsonrpc(INITIALIZE, INITIALIZED, _call(2, "flood", {"megabytes": 300})))
    process.stdin.flush()  # and never read its stdout
    time.sleep(6)
    status = Path(f"/proc/{process.pid}/status").read_text(encoding="utf-8")
    rss_mib = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024
    process.kill()
    process.wait(timeout=10)
    process.stdin.close()
    assert rss_mib < 48, f"the launcher holds {rss_mib:.0f} MiB for a client that does not read"
    assert wait_gone(sandbox.marker) == []


def test_a_mount_source_the_sandbox_cannot_reach_is_refused_before_anything_starts(sandbox: Sandbox) -> None:
    """Red team: root saw the source, bwrap (as the sandbox's uid) did not, and the failure exited 1."""
    private = sandbox.base / "private"
    (private / "data").mkdir(parents=True)
    private.chmod(0o700)
    spec = sandbox.spec("unreachable", "    env: {set: {PYTHONPATH: /opt/site}}\n    logging: {audit: true, sink: stderr}")
    text = spec.read_text(encoding="utf-8").replace("      - {from: workspace.input", f"      - {{from: {private}/data, to: /data}}\n      - {{from: workspace.input", 1)
    spec.write_text(text, encoding="utf-8")
    launcher = sandbox.build(spec)
    done = _run(launcher, {"MCPSPEC_RUN_ID": "unreachable"}, _jsonrpc(INITIALIZE))
    assert done.returncode == 125 and b"cannot reach it" in done.stderr, done.stderr
    assert [record["ended_by"] for record in _audit_lines(done.stderr)] == ["refused"]


def test_a_coding_cookie_in_the_spec_file_name_does_not_change_how_the_launcher_reads(sandbox: Sandbox) -> None:
    """Red team: `coding:shift_jis(1).yaml` put an encoding declaration on line 2, and an env value became code."""
    value = "\u00c1',str(__import__(\"os\").system(\"touch PWNED\")),]],#"
    plain = sandbox.spec("cookie", "    env: {set: {PYTHONPATH: /opt/site, GREETING: " + json.dumps(value) + "}}")
    hostile = plain.with_name("coding:shift_jis(1).yaml")
    hostile.write_text(plain.read_text(encoding="utf-8"), encoding="utf-8")
    launcher = sandbox.build(hostile)
    assert launcher.read_text(encoding="utf-8").splitlines()[1] == "# -*- coding: utf-8 -*-"
    got = call_tools(launcher, [("environment", {})], {"MCPSPEC_RUN_ID": "cookie"})
    assert got[0]["env"]["GREETING"] == value
    assert not list(sandbox.base.rglob("PWNED")) and not Path("PWNED").exists()


def _reply(stream: object, request_id: int, seconds: float = 30) -> dict[str, object]:
    """The JSON-RPC answer to ``request_id`` from the launcher's stdout (other lines skipped)."""
    deadline = time.monotonic() + seconds
    assert hasattr(stream, "readline")
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == request_id:
            return message
    raise AssertionError(f"no answer to request {request_id}")


def test_a_cancelled_request_leaves_the_session_idle(sandbox: Sandbox, tmp_path: Path) -> None:
    """Red team, round 2: a request the client cancelled kept the session open until max_lifetime."""
    spec = sandbox.spec("cancel", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {idle_timeout: 2s}\n    logging: {audit: true, sink: stderr}")
    launcher = sandbox.build(spec)
    with (tmp_path / "err").open("wb") as err:
        process = subprocess.Popen([str(launcher)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                   env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "cancel"})
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_jsonrpc(INITIALIZE))
        process.stdin.flush()
        _reply(process.stdout, 1)
        process.stdin.write(_jsonrpc(INITIALIZED, _call(2, "pause", {"seconds": 60})))
        process.stdin.flush()
        time.sleep(3)  # the call is pending: not idle
        assert process.poll() is None
        cancelled = time.monotonic()
        process.stdin.write(_jsonrpc({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "user"}}))
        process.stdin.flush()
        process.wait(timeout=30)
        process.stdin.close()
        process.stdout.close()
    assert time.monotonic() - cancelled < 10
    assert _audit_lines((tmp_path / "err").read_bytes())[-1]["ended_by"] == "idle_timeout"


def test_a_line_nested_past_pythons_depth_is_not_a_message_and_not_an_error() -> None:
    """Red team, round 2: json.loads raised RecursionError in the root launcher's relay and ended the session."""
    from mcpspec.targets.bwrap.runtime import json_messages

    assert list(json_messages(b"[" * 100000)) == []
    assert list(json_messages(b'{"jsonrpc": "2.0", "id": 7, "result": {}}')) == [{"jsonrpc": "2.0", "id": 7, "result": {}}]


def test_a_relayed_session_takes_stdin_from_a_file_or_dev_null(sandbox: Sandbox, tmp_path: Path) -> None:
    """Red team, round 2: with idle_timeout, stdin that epoll cannot watch made the launcher exit 125."""
    spec = sandbox.spec("devnull", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {idle_timeout: 1m}")
    launcher = sandbox.build(spec)
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(_jsonrpc(INITIALIZE))
    for source, run_id in ((os.devnull, "devnull"), (str(requests), "file")):
        with open(source, "rb") as stdin, (tmp_path / f"out-{run_id}").open("wb") as stdout:
            done = subprocess.run([str(launcher)], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=60, check=False,
                                  env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": run_id})
        assert done.returncode == 0, (source, done.stderr[-500:])
    answers = [json.loads(line) for line in (tmp_path / "out-file").read_bytes().splitlines() if line.strip()]
    assert answers and answers[0]["id"] == 1  # the answer went to a regular file, which epoll cannot watch either


def test_sigterm_stops_a_launcher_whose_client_stopped_reading(sandbox: Sandbox, tmp_path: Path) -> None:
    """Red team, round 2: handing the last output to a client that does not read ignored SIGTERM and lost the audit line."""
    spec = sandbox.spec("stuck", "    env: {set: {PYTHONPATH: /opt/site}}\n    lifecycle: {idle_timeout: 1m}\n    logging: {audit: true, sink: stderr}")
    launcher = sandbox.build(spec)
    with (tmp_path / "err").open("wb") as err:
        process = subprocess.Popen([str(launcher)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                   env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "stuck"})
        assert process.stdin is not None
        process.stdin.write(_jsonrpc(INITIALIZE, INITIALIZED, _call(2, "flood", {"megabytes": 8})))
        process.stdin.flush()  # and never read its stdout
        time.sleep(4)
        process.terminate()
        stopped = time.monotonic()
        process.wait(timeout=30)
        process.stdin.close()
    assert time.monotonic() - stopped < 8
    assert process.returncode == 143
    assert _audit_lines((tmp_path / "err").read_bytes())[-1]["ended_by"] == "signal"
    assert wait_gone(sandbox.marker) == []
