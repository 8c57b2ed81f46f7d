"""Issue 25 item 5: the bwrap sandbox's memory, pids and cpus limits hold for everything it runs.

RLIMIT_AS let a server hold 1 GiB of memfd pages under `memory: 128Mi`. Each test runs an
attacker as the sandboxed server of a generated launcher, started as root (as MCP clients on
servers start launchers), and checks the cgroup the launcher made for it from the host side.
"""

from __future__ import annotations

import json
import os
import re
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
from harness import SANDBOX_PYTHON, wait_gone

from mcpspec.api import load
from mcpspec.targets.build import build_plan
from mcpspec.targets.writer import write_build

MIB = 1 << 20
LEAF = re.compile(r"/mcpspec-attack-[0-9a-f]{16}$")

# Each attack prints JSON lines: what it saw, then how far it got. It waits for a line on stdin
# before attacking, so the test can look at its cgroup from the host first.
ATTACKS = {
    "memfd.py": r'''
import json, os, sys
def say(**values):
    print(json.dumps(values), flush=True)
cgroup_files = {}
for path in ("/sys/fs/cgroup/memory/cgroup.procs", "/sys/fs/cgroup/cgroup.procs", "/proc/self/cgroup"):
    try:
        with open(path, "a") as handle:
            handle.write("1\n")
        cgroup_files[path] = "written"
    except OSError as exc:
        cgroup_files[path] = exc.errno
say(pid=os.getpid(), cgroup_files=cgroup_files)
sys.stdin.readline()
held, fds, piece = 0, [], b"m" * MIB
while held < 1024 * MIB:
    fd = os.memfd_create("hold")
    fds.append(fd)
    for _ in range(16):
        os.write(fd, piece)
        held += MIB
    say(held_mib=held // MIB)
say(done=True)
'''.replace("MIB", str(MIB)),
    # System V shared memory, 16 MiB segments attached one at a time (RLIMIT_AS sees 16 MiB), left in the IPC namespace.
    "sysvshm.py": r'''
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
print(json.dumps({"pid": os.getpid()}), flush=True)
sys.stdin.readline()
held = 0
while held < 1024 * MIB:
    segment = libc.shmget(0, 16 * MIB, 0o1600)
    if segment < 0:
        print(json.dumps({"error": ctypes.get_errno()}), flush=True)
        break
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 0x6D, 16 * MIB)
    libc.shmdt(ctypes.c_void_p(address))
    held += 16 * MIB
    print(json.dumps({"held_mib": held // MIB}), flush=True)
else:
    print(json.dumps({"done": True}), flush=True)
'''.replace("MIB", str(MIB)),
    "forks.py": r'''
import json, os, resource, sys
print(json.dumps({"pid": os.getpid(), "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0]}), flush=True)
sys.stdin.readline()
hold_r, hold_w = os.pipe()
started, error = 0, None
while started < 500:
    try:
        pid = os.fork()
    except OSError as exc:
        error = exc.errno
        break
    if pid == 0:
        os.close(hold_w)
        os.read(hold_r, 1)
        os._exit(0)
    started += 1
print(json.dumps({"started": started, "error": error}), flush=True)
os.close(hold_w)
''',
    "burn.py": r'''
import json, os, sys, time
print(json.dumps({"pid": os.getpid()}), flush=True)
sys.stdin.readline()
children = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 4
        while time.monotonic() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
times = os.times()
print(json.dumps({"cpu_seconds": times.children_user + times.children_system}), flush=True)
''',
}


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    require_tool("bwrap")
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("the cgroup attacks are run as root, as MCP clients on servers run launchers (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("the cgroup attacks are run as root")
    path = Path(tempfile.mkdtemp(prefix="mcpspec-cgroup-", dir="/tmp"))  # the sandbox's uid must reach it
    path.chmod(0o755)
    attacks = path / "attacks"
    attacks.mkdir(mode=0o755)
    for name, text in ATTACKS.items():
        (attacks / name).write_text(text, encoding="utf-8")
        (attacks / name).chmod(0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _launcher(base: Path, script: str, runtime: str, lifecycle: str = "") -> Path:
    spec = base / f"{script}.yaml"
    spec.write_text(f"""version: 1
project: cg
agents:
  tester: {{servers: [attack]}}
servers:
  attack:
    command: [{SANDBOX_PYTHON}, -I, -S, /attacks/{script}]
    mounts:
      - {{from: {base / 'attacks'}, to: /attacks}}
    runtime: {runtime}
{lifecycle}
""", encoding="utf-8")
    out = base / f"out-{script}"
    build = build_plan(load(spec), "bwrap", fail_on="critical")
    write_build(out, build)
    return out / "attack.py"


def _start(launcher: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(launcher)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "cg", **(env or {})})


def _line(process: subprocess.Popen[bytes]) -> dict[str, object]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, process.stderr.read().decode() if process.stderr else ""
    return dict(json.loads(line))


def _leaves(pid: int) -> dict[str, str]:
    """The host-side cgroup directories of sandboxed ``pid``: {v1 controller or "": path}."""
    found = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text(encoding="utf-8").splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def _host_pid(pid_inside: int, script: str) -> int:
    """The host pid of the attack (its pid inside is 1: --as-pid-1)."""
    assert pid_inside == 1
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if f"/attacks/{script}".encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    return int(entry)
            except OSError:
                continue
    raise AssertionError("the attack is not running")


def _mount_of(controller: str) -> str:
    for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if tail[0] == "cgroup" and controller in tail[2].split(","):
            return fields[4]
        if tail[0] == "cgroup2" and controller == "" and fields[4].startswith("/sys/fs/cgroup"):
            return fields[4]
    raise AssertionError(f"no {controller or 'cgroup2'} mount")


def _memory_leaf(leaves: dict[str, str]) -> Path:
    """Where the memory limit lives on this host: the v1 memory hierarchy on a hybrid host, else v2."""
    if "memory" in leaves:
        return Path(_mount_of("memory") + leaves["memory"])
    return Path(_mount_of("") + leaves[""])


def test_system_v_shared_memory_counts_against_the_memory_limit(base: Path) -> None:
    """Segments attached one at a time pass RLIMIT_AS; the cgroup counts their pages."""
    launcher = _launcher(base, "sysvshm.py", "{memory: 128Mi}")
    process = _start(launcher)
    _line(process)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"go\n")
    process.stdin.flush()
    said = [json.loads(raw) for raw in process.stdout]
    process.wait(timeout=60)
    assert said and not any("done" in item for item in said), "the sandbox held 1 GiB of System V shared memory under memory: 128Mi"
    assert max(int(item.get("held_mib", 0)) for item in said) <= 128, said[-3:]
    assert process.returncode == 128 + 9, process.returncode
    assert wait_gone("/attacks/sysvshm.py") == []


def test_memfd_pages_count_against_the_memory_limit(base: Path) -> None:
    """1 GiB written to memfds under `memory: 128Mi` was held; now the sandbox's cgroup stops it
    near 128 MiB, the sandbox cannot write any cgroup file, and the leaf is gone afterwards."""
    launcher = _launcher(base, "memfd.py", "{memory: 128Mi}")
    process = _start(launcher)
    first = _line(process)
    host_pid = _host_pid(int(str(first["pid"])), "memfd.py")
    leaves = _leaves(host_pid)
    leaf = _memory_leaf(leaves)
    assert LEAF.search(str(leaf)), leaves
    if "memory" in leaves:  # a hybrid host: cgroup v1's memory hierarchy, swap counted with memsw when the kernel has it
        assert int((leaf / "memory.limit_in_bytes").read_text()) == 128 * MIB
        memsw = leaf / "memory.memsw.limit_in_bytes"
        assert not memsw.exists() or int(memsw.read_text()) == 128 * MIB
    else:
        assert int((leaf / "memory.max").read_text()) == 128 * MIB
        swap = leaf / "memory.swap.max"
        assert not swap.exists() or swap.read_text().strip() == "0"
    assert all(value != "written" for value in dict(first["cgroup_files"]).values()), first  # type: ignore[call-overload]
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"go\n")
    process.stdin.flush()
    held = 0
    for raw in process.stdout:
        said = json.loads(raw)
        assert "done" not in said, "the sandbox held 1 GiB of memfd pages under memory: 128Mi"
        held = max(held, int(said.get("held_mib", 0)))
    process.wait(timeout=60)
    assert held <= 128, held
    assert process.returncode == 128 + 9, (process.returncode, process.stderr.read() if process.stderr else b"")  # the OOM killer's SIGKILL
    assert not leaf.exists(), "the launcher removes the sandbox's cgroup"
    audit = [json.loads(line) for line in (process.stderr.read() if process.stderr else b"").splitlines() if line.startswith(b'{"event"')]
    assert audit and audit[-1]["cgroup"] == ("v1" if "memory" in leaves else "v2"), audit
    assert wait_gone("/attacks/memfd.py") == []


def test_a_fork_bomb_stops_at_the_sandboxs_own_pids_limit(base: Path) -> None:
    """The cgroup's pids.max is the sandbox's own (RLIMIT_NPROC, shared by the whole uid, is not set)."""
    launcher = _launcher(base, "forks.py", "{pids: 24}")
    process = _start(launcher)
    first = _line(process)
    leaves = _leaves(_host_pid(int(str(first["pid"])), "forks.py"))
    pids_leaf = Path(_mount_of("pids") + leaves["pids"]) if "pids" in leaves else Path(_mount_of("") + leaves[""])
    assert LEAF.search(str(pids_leaf)) and int((pids_leaf / "pids.max").read_text()) == 24
    assert process.stdin is not None
    process.stdin.write(b"go\n")
    process.stdin.flush()
    result = _line(process)
    process.wait(timeout=60)
    assert result["error"] == 11, result  # EAGAIN
    assert int(str(result["started"])) < 24, result  # bwrap and the attacker count too
    assert first["nproc"] != 24, "the cgroup bounds the sandbox, not an rlimit shared by its uid"
    assert not pids_leaf.exists() and wait_gone("/attacks/forks.py") == []


def test_cpus_is_a_rate_for_every_process_of_the_sandbox(base: Path) -> None:
    """Two busy processes for 4 s under `cpus: 0.2` get about 0.8 CPU-seconds between them, not 8."""
    launcher = _launcher(base, "burn.py", "{cpus: 0.2}", "    lifecycle: {max_lifetime: 60s}")
    process = _start(launcher)
    first = _line(process)
    leaves = _leaves(_host_pid(int(str(first["pid"])), "burn.py"))
    cpu_leaf = Path(_mount_of("cpu") + leaves["cpu"]) if "cpu" in leaves else Path(_mount_of("") + leaves[""])
    assert LEAF.search(str(cpu_leaf))
    assert process.stdin is not None
    process.stdin.write(b"go\n")
    process.stdin.flush()
    result = _line(process)
    process.wait(timeout=60)
    assert float(str(result["cpu_seconds"])) < 1.4, result
    assert not cpu_leaf.exists()


def test_without_a_cgroup_the_launcher_refuses_unless_told_rlimits_will_do(base: Path) -> None:
    """A launcher that cannot make a cgroup (not root, no delegated subtree: here, as uid 65533)
    refuses to start a server with limits, before anything starts; MCPSPEC_CGROUP=optional runs it
    with the rlimits and says on stderr that memfd and shared memory are not counted."""
    setpriv = require_tool("setpriv")
    launcher = _launcher(base, "forks.py", "{memory: 256Mi, pids: 24}")
    wrapper = base / "as-65533.sh"
    wrapper.write_text(f"#!/bin/sh\nexec {setpriv} --reuid=65533 --regid=65533 --clear-groups {launcher}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    for path in (launcher.parent, *launcher.parent.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644 if path.suffix != ".py" else 0o755)
    refused = subprocess.run([str(wrapper)], input=b"go\n", capture_output=True, timeout=60, check=False,
                             env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "cg"})
    assert refused.returncode == 125 and b"no cgroup can hold" in refused.stderr and refused.stdout == b"", refused
    allowed = subprocess.run([str(wrapper)], input=b"go\n", capture_output=True, timeout=60, check=False,
                             env={"PATH": os.environ["PATH"], "MCPSPEC_RUN_ID": "cg", "MCPSPEC_CGROUP": "optional"})
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stderr.count(b"does not count memfd or shared memory") == 1
    audit = [json.loads(line) for line in allowed.stderr.splitlines() if line.startswith(b'{"event"')]
    assert audit and audit[-1]["cgroup"] is None, allowed.stderr
    said = [json.loads(line) for line in allowed.stdout.splitlines()]
    assert said[0]["nproc"] == 24 and said[1]["error"] == 11


def test_a_killed_launcher_leaves_no_cgroup_behind(base: Path) -> None:
    """SIGKILL of the launcher while its sandbox runs: the guardian kills the sandbox and removes the leaf."""
    launcher = _launcher(base, "forks.py", "{memory: 128Mi, pids: 24}")
    process = _start(launcher)
    first = _line(process)
    leaves = _leaves(_host_pid(int(str(first["pid"])), "forks.py"))
    made = [Path(_mount_of(name) + path) for name, path in leaves.items() if LEAF.search(path)]
    assert made and all(path.is_dir() for path in made), leaves
    process.kill()
    process.wait()
    assert wait_gone("/attacks/forks.py") == []
    deadline = time.monotonic() + 10
    while any(path.exists() for path in made) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(path.exists() for path in made), made


def test_no_cgroup_path_the_launcher_or_its_guardian_uses_leaves_the_cgroup_tree(tmp_path: Path) -> None:
    """The leaf's name comes from the server name (a build-time NAME, checked again at launch) and
    random hex; the paths read from /proc or the guardian's pipe never have a "." or ".." part."""
    from mcpspec.targets.bwrap import runtime

    for bad in ("/..", "/a/../b", "/a/.", "/./a", "..", "a/b", "/a\nb", "/a b"):
        assert not runtime.CGROUP_PATH.fullmatch(bad), bad
    assert runtime.CGROUP_PATH.fullmatch("/process_api/e80/mcpspec-x-0123456789abcdef")
    for name in ("../x", "mcpspec-../-0123456789abcdef", "mcpspec-x-0123", "x"):
        with pytest.raises(OSError):
            runtime.make_leaf(str(tmp_path), name)
    assert list(tmp_path.iterdir()) == []
    runtime.remove_cgroup(str(tmp_path))  # not a leaf's name: left alone
    assert tmp_path.is_dir()
