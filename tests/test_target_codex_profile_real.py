"""The codex-profile target against the real Codex CLI: a real MCP server (the probe, on the `mcp`
SDK) started exactly as the generated `[mcp_servers]` entry says, under the generated profile,
attacked from inside. Each test fails if the attack gets through. Network: loopback only.

Codex keeps its sandbox helper under CODEX_HOME and refuses to put it in the temporary directory,
so each run gets its own TMPDIR beside HOME; Codex is installed here outside /usr, so its package
directory is added to the profile, read only, as the target's README tells users to. The probe
server runs through os_write_wakeup.py: Codex's filter refuses send(2) on the socketpair asyncio
wakes its loop with, so a server on the `mcp` SDK would hang at its first request (the README says so).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from conftest import require_tool
from mcpspec.api import load
from mcpspec.targets.build import build_plan

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import SANDBOX_PYTHON, Listener, copy_mcp_closure, sandbox_python_matches

PROBE = Path(__file__).parent / "probe"
SECRET = "codex-profile-home-secret"
KEY_NAME, KEY_PAYLOAD = b"mcpspec-probe-secret", b"launcher-key"
KEYCTL_JOIN_SESSION_KEYRING, KEY_SPEC_SESSION_KEYRING = 1, -3
SYSCALLS = {"x86_64": {"keyctl": 250, "add_key": 248}, "aarch64": {"keyctl": 219, "add_key": 217}}


@dataclass
class Box:
    """A built spec, a HOME holding the generated config and a secret, and how Codex is started."""

    base: Path
    home: Path
    codex: str
    config: dict[str, Any]
    input_dir: Path
    output_dir: Path
    probe_dir: Path

    @property
    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "PATH": "/usr/bin:/bin", "TMPDIR": str(self.base / "tmpdir"), "LAUNCHER_ONLY": SECRET}

    def entry(self, name: str = "probe") -> dict[str, Any]:
        entry: dict[str, Any] = self.config["mcp_servers"][name]
        return entry


def _spec(base: Path, site: Path, probe_dir: Path) -> str:
    return f"""version: 1
project: e2e
workspace:
  root: {base}/ws
  per_agent: true
  dirs:
    input: {{mode: ro}}
    output: {{mode: rw}}
agents:
  tester: {{servers: [probe]}}
servers:
  probe:
    command: [{SANDBOX_PYTHON}, {probe_dir}/os_write_wakeup.py, {probe_dir}/probe_server.py, marker]
    env: {{inherit: none, set: {{PYTHONPATH: {site}}}}}
    mounts:
      - {{from: {site}, to: {site}, mode: ro}}
      - {{from: {probe_dir}, to: {probe_dir}, mode: ro}}
      - {{from: workspace.input, to: /workspace/input}}
      - {{from: workspace.output, to: /workspace/output}}
    tools:
      read_path: {{effects: [reads_private]}}
  short:
    command: [{SANDBOX_PYTHON}, {probe_dir}/os_write_wakeup.py, {probe_dir}/probe_server.py, short-lived]
    env: {{inherit: none, set: {{PYTHONPATH: {site}}}}}
    lifecycle: {{max_lifetime: 4s}}
    mounts:
      - {{from: {site}, to: {site}, mode: ro}}
      - {{from: {probe_dir}, to: {probe_dir}, mode: ro}}
"""


@pytest.fixture(scope="module")
def box() -> Iterator[Box]:
    codex = require_tool("codex")
    if not sandbox_python_matches():
        pytest.fail("/usr/bin/python3 must be the same minor version as the test interpreter (the probe server runs on it)")
    base = Path(tempfile.mkdtemp(prefix="mcpspec-codex-", dir="/tmp"))
    try:
        site, probe_dir, home = base / "site", base / "probe", base / "home"
        copy_mcp_closure(site)
        probe_dir.mkdir()
        for name in ("probe_server.py", "syscall_probe.py", "os_write_wakeup.py"):
            shutil.copy2(PROBE / name, probe_dir / name)
        (base / "tmpdir").mkdir()
        (home / ".codex").mkdir(parents=True)
        (home / "secret.txt").write_text(SECRET, encoding="utf-8")
        spec = base / "e2e.yaml"
        spec.write_text(_spec(base, site, probe_dir), encoding="utf-8")
        build = build_plan(load(spec), "codex-profile")
        blocking = [f"{r.code} {r.message}" for r in build.findings if r.suppression is None and r.severity in ("critical", "high")]
        assert not blocking, blocking
        config = tomllib.loads(build.files["codex-config.toml"])
        input_dir, output_dir = (Path(key) for key in list(config["permissions"]["mcpspec-probe"]["filesystem"])[-2:])
        # The README's step for a Codex installed outside /usr: its package directory, read only.
        package = str(Path(codex).resolve().parents[2])
        for profile in config["permissions"].values():
            profile["filesystem"][package] = "read"
        (home / ".codex" / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
        input_dir.mkdir(parents=True)
        output_dir.mkdir(parents=True)
        (input_dir / "readme.txt").write_text("input", encoding="utf-8")
        yield Box(base, home, codex, config, input_dir, output_dir, probe_dir)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _call(box: Box, calls: list[tuple[str, dict[str, Any]]], server: str = "probe") -> list[Any]:
    """Start the entry as Codex would (its command, args and cwd) and call each tool with the MCP SDK's client."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    entry = box.entry(server)
    assert entry["command"] == "codex"
    params = StdioServerParameters(command=box.codex, args=entry["args"], env=box.env, cwd=entry.get("cwd"))
    log = box.base / "codex-stderr.log"

    async def run() -> list[Any]:
        results = []
        with open(log, "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for name, arguments in calls:
                    reply = await session.call_tool(name, arguments)
                    results.append(json.loads(reply.content[0].text if reply.content else "{}"))  # type: ignore[union-attr]
        return results

    try:
        return asyncio.run(asyncio.wait_for(run(), 90))
    except BaseException as exc:
        raise AssertionError("the session through codex sandbox failed:\n" + log.read_text(encoding="utf-8", errors="replace")[-3000:]) from exc


def test_codex_reads_the_entry_as_written(box: Box) -> None:
    """`codex mcp get` prints the entry as Codex parsed it: every key the build wrote, applied."""
    done = subprocess.run([box.codex, "mcp", "get", "probe", "--json"], env=box.env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    entry = box.entry()
    assert seen["transport"]["command"] == "codex" and seen["transport"]["args"] == entry["args"]
    assert seen["enabled_tools"] == entry["enabled_tools"] == ["read_path"]
    assert entry["args"][:4] == ["sandbox", "--permission-profile", "mcpspec-probe", "--"]


def test_codex_loads_every_key_the_build_writes(box: Box) -> None:
    """Another spec's keys (env_vars, cwd, a ~/ path, a path with quotes and a backslash) through the real binary: the
    entry as `codex mcp get` parsed it, and the profile applied by `codex sandbox` (the file it grants read is read)."""
    odd = box.base / 'odd "dir" \\ x'
    odd.mkdir(exist_ok=True)
    (odd / "f.txt").write_text("odd", encoding="utf-8")
    (box.home / "notes").mkdir(exist_ok=True)
    (box.home / "notes" / "n.txt").write_text("note", encoding="utf-8")
    text = f"""version: 1
project: keys
servers:
  other:
    command: [/usr/bin/cat]
    workdir: /data
    env: {{inherit: [LANG, KEEP_ME]}}
    mounts:
      - {{from: {json.dumps(str(odd))}, to: /data, mode: ro}}
      - {{from: ~/notes, to: /notes}}
"""
    (box.base / "keys.yaml").write_text(text, encoding="utf-8")
    config = tomllib.loads(build_plan(load(box.base / "keys.yaml"), "codex-profile").files["codex-config.toml"])
    config["permissions"]["mcpspec-other"]["filesystem"][str(Path(box.codex).resolve().parents[2])] = "read"
    home = box.base / "home-keys"
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / "notes").mkdir(exist_ok=True)
    (home / "notes" / "n.txt").write_text("note", encoding="utf-8")
    (home / ".codex" / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    env = {**box.env, "HOME": str(home)}
    done = subprocess.run([box.codex, "mcp", "get", "other", "--json"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    transport = json.loads(done.stdout)["transport"]
    entry = config["mcp_servers"]["other"]
    assert transport["env_vars"] == entry["env_vars"] == ["LANG", "KEEP_ME"]
    assert transport["cwd"] == entry["cwd"] == str(odd)
    assert transport["args"] == entry["args"]
    profile = ["sandbox", "--permission-profile", "mcpspec-other", "--", "/usr/bin/cat"]
    read = subprocess.run([box.codex, *profile, str(odd / "f.txt"), str(home / "notes" / "n.txt")], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (read.returncode, read.stdout) == (0, "oddnote"), read.stderr[-2000:]
    denied = subprocess.run([box.codex, *profile, str(box.home / "secret.txt")], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert denied.returncode != 0 and SECRET not in denied.stdout


def test_a_read_only_mount_inside_a_writable_one_stays_read_only(box: Box) -> None:
    outer = box.base / "nest" / "rw"
    inner = outer / "ro"
    inner.mkdir(parents=True)
    text = f"""version: 1
project: nest
servers:
  nest:
    command: [/bin/sh]
    mounts:
      - {{from: {inner}, to: {inner}, mode: ro}}
      - {{from: {outer}, to: {outer}, mode: rw}}
"""
    (box.base / "nest.yaml").write_text(text, encoding="utf-8")
    config = tomllib.loads(build_plan(load(box.base / "nest.yaml"), "codex-profile").files["codex-config.toml"])
    config["permissions"]["mcpspec-nest"]["filesystem"][str(Path(box.codex).resolve().parents[2])] = "read"
    home = box.base / "home-nest"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    script = f"touch {outer}/made; touch {inner}/made"
    done = subprocess.run([box.codex, "sandbox", "--permission-profile", "mcpspec-nest", "--", "/bin/sh", "-c", script],
                          env={**box.env, "HOME": str(home)}, capture_output=True, text=True, timeout=60, check=False)
    assert (outer / "made").exists(), done.stderr[-2000:]
    assert not (inner / "made").exists(), "a write reached the read-only mount inside the writable one"


def test_the_server_reads_and_writes_only_what_the_spec_mounts(box: Box) -> None:
    secret = box.home / "secret.txt"
    beside = box.base / "beside.txt"
    beside.write_text(SECRET, encoding="utf-8")
    planted = box.output_dir / "planted"
    with contextlib.suppress(FileNotFoundError):
        planted.unlink()
    planted.symlink_to(secret)
    results = _call(box, [
        ("read_path", {"path": str(box.input_dir / "readme.txt")}),       # 0 granted read: works
        ("write_path", {"path": str(box.output_dir / "out.txt"), "data": "x"}),  # 1 granted write: works
        ("read_path", {"path": str(secret)}),                              # 2 HOME's secret
        ("read_path", {"path": str(beside)}),                              # 3 a file beside the mounts
        ("read_path", {"path": str(box.home / ".codex" / "config.toml")}),  # 4 Codex's own config
        ("write_path", {"path": str(box.input_dir / "new.txt"), "data": "x"}),  # 5 the ro mount
        ("write_path", {"path": str(box.base / "new.txt"), "data": "x"}),  # 6 outside every mount
        ("write_path", {"path": "/tmp/mcpspec-codex-escape", "data": "x"}),  # 7 the host's /tmp
        ("read_path", {"path": str(planted)}),                             # 8 a link the host planted in a rw mount
        ("replace_with_symlink", {"path": str(box.output_dir / "mine"), "target": str(secret)}),  # 9
        ("read_path", {"path": str(box.output_dir / "mine")}),             # 10 a link the server planted
        ("write_path", {"path": str(box.output_dir / "mine"), "data": "x"}),  # 11 writing through it
        ("write_path", {"path": str(box.probe_dir / "probe_server.py"), "data": "x"}),  # 12 its own code (ro)
    ])
    assert results[0] == {"ok": True, "data": "input"} and results[1] == {"ok": True}
    for index in (2, 3, 4, 8, 10):
        assert results[index]["ok"] is False, (index, results[index])
    for index in (5, 12):  # read-only mounts
        assert results[index]["ok"] is False, (index, results[index])
    # Codex's sandbox root is a tmpfs of its own: a write outside the mounts may land there, never on the host.
    assert secret.read_text(encoding="utf-8") == SECRET
    assert not (box.input_dir / "new.txt").exists() and not (box.base / "new.txt").exists()
    assert not Path("/tmp/mcpspec-codex-escape").exists()
    assert (box.probe_dir / "probe_server.py").read_text(encoding="utf-8") == (PROBE / "probe_server.py").read_text(encoding="utf-8")
    assert (box.output_dir / "out.txt").read_text(encoding="utf-8") == "x"


def test_no_address_of_either_family_is_reachable_and_nothing_listens(box: Box) -> None:
    listeners = [Listener("127.0.0.1"), Listener("::1")]
    try:
        for listener, host in zip(listeners, ("127.0.0.1", "::1"), strict=True):
            with contextlib.closing(socket.create_connection((host, listener.port), timeout=3)):
                pass  # the host reaches them: the sandbox must not
        bind = ("import socket,json\nout={}\nfor fam,host in ((socket.AF_INET,'127.0.0.1'),(socket.AF_INET6,'::1'),(socket.AF_INET,'0.0.0.0')):\n"
                "    try:\n        s=socket.socket(fam); s.bind((host,0)); s.listen(); out[host]='listening'\n"
                "    except OSError as e: out[host]=e.errno\nprint(json.dumps(out))")
        results = _call(box, [
            ("connect", {"host": "127.0.0.1", "port": listeners[0].port}),
            ("connect", {"host": "::1", "port": listeners[1].port}),
            ("http_get", {"url": f"http://127.0.0.1:{listeners[0].port}/"}),
            ("connect", {"host": "127.0.0.2", "port": listeners[0].port}),
            ("spawn", {"argv": [SANDBOX_PYTHON, "-c", bind]}),
        ])
    finally:
        for listener in listeners:
            listener.close()
    for index in range(4):
        assert results[index]["ok"] is False, (index, results[index])
    listened = json.loads(results[4]["stdout"])
    assert "listening" not in listened.values(), listened


def test_nothing_of_the_host_reaches_the_server_through_proc(box: Box) -> None:
    """The test's own process (Codex's parent) and Codex itself are out of reach: another pid namespace."""
    host_pid = os.getpid()
    results = _call(box, [
        ("read_path", {"path": f"/proc/{host_pid}/environ"}),
        ("list_dir", {"path": "/proc"}),
        ("environment", {}),
        ("cmdlines", {}),
        ("identity", {}),
    ])
    assert results[0]["ok"] is False, results[0]
    pids = [entry for entry in results[1]["entries"] if entry.isdigit()]
    assert len(pids) < 10, pids  # a pid namespace of its own: no process of the host is listed
    # env -i: the server's own environment is the spec's values and PATH alone (Python itself adds LC_CTYPE in the C locale).
    assert set(results[2]["env"]) - {"LC_CTYPE"} == {"PYTHONPATH", "PATH"}, results[2]
    assert SECRET not in json.dumps(results[3]), "a command line of the host reached the server"
    caps = results[4]["caps"]
    assert {caps[key] for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb")} == {"0000000000000000"}, caps


def test_memory_past_the_limit_is_refused_to_the_server(box: Box) -> None:
    """The built-in default, 512 MiB: prlimit --as before the server starts."""
    assert "--as=536870912" in box.entry()["args"]
    results = _call(box, [("allocate", {"megabytes": 600}), ("allocate", {"megabytes": 16})])
    assert results[0] == {"ok": False, "error": "MemoryError"}, results[0]
    assert results[1]["ok"] is True, results[1]


def test_max_lifetime_ends_the_server_and_the_processes_it_started(box: Box) -> None:
    assert _call(box, [("spawn", {"argv": ["/bin/true"]})], server="short")[0]["status"] == 0  # it serves until then
    started = time.monotonic()
    with pytest.raises(AssertionError):  # the session ends under the call: the server is gone
        _call(box, [("spawn", {"argv": ["/bin/sh", "-c", "sleep 37.25; echo done", "short-lived-child"]})], server="short")
    assert 3 < time.monotonic() - started < 20
    deadline = time.monotonic() + 10
    while _outliving() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _outliving(), "a process of the server outlived max_lifetime"


def _outliving() -> list[int]:
    return [pid for pid in _pids() if b"short-lived" in _cmdline(pid) or b"37.25" in _cmdline(pid)]


FORKS = """import os, time
children = []
try:
    for _ in range(200):
        pid = os.fork()
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        children.append(pid)
except OSError as exc:
    print("stopped", len(children), exc.errno)
else:
    print("forked", len(children))
for pid in children:
    os.waitpid(pid, 0)
"""


def test_a_fork_bomb_stops_at_the_process_limit_for_a_user_other_than_root(box: Box) -> None:
    """RLIMIT_NPROC does not hold for root, so the entry runs as an unprivileged uid here, as a developer runs Codex."""
    require_tool("setpriv")
    base = box.base / "nproc"
    home = base / "home"
    (home / ".codex").mkdir(parents=True)
    (base / "tmpdir").mkdir()
    text = f"version: 1\nproject: nproc\nservers:\n  bomb:\n    command: [{SANDBOX_PYTHON}, -c, {json.dumps(FORKS)}]\n    runtime: {{pids: 16}}\n"
    (base / "nproc.yaml").write_text(text, encoding="utf-8")
    config = tomllib.loads(build_plan(load(base / "nproc.yaml"), "codex-profile").files["codex-config.toml"])
    config["permissions"]["mcpspec-bomb"]["filesystem"][str(Path(box.codex).resolve().parents[2])] = "read"
    (home / ".codex" / "config.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    uid = 65532
    for path in (base, *base.rglob("*")):
        os.chown(path, uid, uid)
    for path in (box.base, box.base / "nproc"):
        path.chmod(0o755)
    argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", box.codex, *config["mcp_servers"]["bomb"]["args"]]
    done = subprocess.run(argv, env={**box.env, "HOME": str(home), "TMPDIR": str(base / "tmpdir")}, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    words = done.stdout.split()
    assert words[0] == "stopped" and int(words[1]) < 16 and words[2] == "11", done.stdout


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and int(entry) != os.getpid()]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _with_a_key_in_a_session_keyring_of_its_own() -> None:
    """preexec: join a new session keyring (the machine's stay untouched) and put a key in it, as a login would."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    numbers = SYSCALLS[os.uname().machine]
    if libc.syscall(ctypes.c_long(numbers["keyctl"]), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), b"mcpspec-test") < 0:
        os._exit(90)
    if libc.syscall(ctypes.c_long(numbers["add_key"]), b"user", KEY_NAME, KEY_PAYLOAD, ctypes.c_long(len(KEY_PAYLOAD)), ctypes.c_long(KEY_SPEC_SESSION_KEYRING)) < 0:
        os._exit(91)


def test_the_dangerous_syscalls_are_refused_and_the_launchers_keyring_is_out_of_reach(box: Box) -> None:
    """The syscall probe as the entry starts the server (its keyring, limits and environment), with a key in the
    session keyring of the process that starts Codex: Codex's filter refuses these calls, and the key is not found."""
    args = box.entry()["args"]
    argv = [box.codex, *args[: args.index("/usr/bin/env")], SANDBOX_PYTHON, str(box.probe_dir / "syscall_probe.py")]
    done = subprocess.run(argv, env=box.env, capture_output=True, text=True, timeout=90, check=False, preexec_fn=_with_a_key_in_a_session_keyring_of_its_own)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    refused = ("io_uring_setup", "ptrace_attach_child", "ptrace_traceme", "process_vm_readv_child", "bpf", "mount_tmpfs", "setns",
               "unshare_net", "unshare_mount", "request_key", "socket_inet", "socket_inet6", "socket_netlink", "socket_packet", "socket_vsock")
    assert {name: seen[name] for name in refused} == dict.fromkeys(refused, "EPERM"), seen
    assert seen["keyctl_read_launcher_key"] == "ENOKEY", seen["keyctl_read_launcher_key"]
