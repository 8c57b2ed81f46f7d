# ---- mcpspec bwrap launcher runtime (constant; the per-server CONFIG is above) ----
# This text is appended verbatim to every generated launcher, after its CONFIG.
# It needs only Python's standard library (3.10 or newer) and runs as the MCP
# client's stdio command, usually as root. Nothing here interpolates spec text
# into a shell: every value reaches bwrap as one argument through a file
# descriptor (--args), so no value is visible on a command line either.
#
# Trust rules for root: every path the launcher creates, opens or changes is
# walked one component at a time with O_NOFOLLOW from "/", following only
# symbolic links owned by root (or by the invoking user when it is not root),
# so a link a sandbox planted in a writable mount leads nowhere. Directories
# root creates for a run are root-owned and not writable by the sandbox.
# Every child (bwrap, squid, socat) gets a parent-death SIGKILL set after its
# last identity change and checked against a parent that already died, so
# killing the launcher at any moment ends all of it.

import contextlib
import ctypes
import errno
import functools
import json
import os
import re
import secrets
import select
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
FALLBACK_ID = 65532  # the host uid/gid that stands in for uid or gid 0 inside the sandbox
TMP_BYTES = 64 * 1024 * 1024
SHM_BYTES = 16 * 1024 * 1024
SECRET_MAX_BYTES = 1024 * 1024
STOP_GRACE_SECONDS = 5.0
CPU_POLL_SECONDS = 0.5
PROXY_PORT_INSIDE = 3128
RELAY_BUFFER_BYTES = 1 << 20  # what the relay holds for a slow reader before it stops reading the writer
SOCKET_INSIDE = "/run/mcpspec/egress.sock"
PAGE_BYTES = 4096
FALLOC_PUNCH_HOLE = 0x03  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
EGRESS_LOG_POLL_SECONDS = 1.0
EGRESS_LOG_ENTRIES = 1000  # distinct destinations the audit names per result; the rest are counted
BRIDGE_CHILDREN = 128  # the most connections the egress bridge relays at once (host processes of its own)
REFUSED = 125
NAME = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ABSOLUTE = re.compile(r"^/[^\x00]*$")

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
KEYCTL_JOIN_SESSION_KEYRING = 1


class Refusal(Exception):
    """The launcher will not start the server (exit 125, a message, an audit line)."""


@dataclass(frozen=True)
class Mount:
    kind: str  # "workspace", "scratch", "host" or "home"
    mode: str  # "ro" or "rw"
    source: str  # a workspace dir name, a host path, or a path under ~
    target: str
    size: int = 0


@dataclass(frozen=True)
class Secret:
    name: str
    provider: str  # "env", "file", "home" or "credential"
    ref: str
    env: str | None = None
    file: str | None = None


@dataclass(frozen=True)
class Config:
    """What the generated head says about one server; every value already validated by mcpspec."""

    project: str
    server: str
    agents: list[str]
    default_agent: str
    uid: int
    gid: int
    workspace_root: str
    per_agent: bool
    env_mode: str  # "list", "minimal", "all" or "none"
    inherit: list[str]
    setenv: list[list[str]]
    share_net: bool
    proxy: bool
    memory_bytes: int
    pids: int
    cpu_seconds: int
    lifetime_seconds: int
    idle_seconds: int
    audit: bool
    audit_sink: str
    audit_mounts: list[dict[str, str]]
    audit_egress: dict[str, Any]
    command: list[str]
    workdir: str | None
    seccomp: dict[str, str]  # the syscall filter per machine architecture, as hex of struct sock_filter[]
    keyctl: dict[str, int]  # keyctl's syscall number per machine architecture
    mounts: list[Mount] = field(default_factory=list)
    secrets: list[Secret] = field(default_factory=list)
    masks: list[str] = field(default_factory=list)
    cpu_millis: int = 0  # runtime.cpus in thousandths: the cgroup's CPU rate
    host_prep: str = ""  # the build's systemd-tmpfiles.d file, beside the launcher: it makes the directories checked here

    @classmethod
    def load(cls, raw: dict[str, Any]) -> "Config":
        values = dict(raw)
        values["mounts"] = [Mount(**item) for item in raw.get("mounts", [])]
        values["secrets"] = [Secret(**item) for item in raw.get("secrets", [])]
        return cls(**values)


# ---------------------------------------------------------------- process hygiene

def _prctl(option: int, arg: int, arg3: int = 0) -> int:
    return int(ctypes.CDLL(None, use_errno=True).prctl(option, arg, arg3, 0, 0))


def close_inherited_fds() -> None:
    """Close every descriptor above 2 that the client handed down, and make sure 0-2 exist."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(os.open("/dev/null", os.O_RDWR), fd)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):
                os.close(fd)


def child_setup(
    parent: int, identity: tuple[int, int, list[int]] | None, limits: list[tuple[int, int]], no_new_privs: bool, announce: int = -1,
    cgroup_procs: tuple[int, ...] = (),
) -> Callable[[], None]:
    """A preexec function: limits, the identity change, then a parent-death signal checked against
    a parent that may already be gone (an identity change clears the signal, so it comes last).

    With ``announce`` (the guardian's control pipe), the child instead tells the guardian its pid
    before it runs anything, and gets no parent-death signal: the guardian, which then always
    knows it, stops it and its children when the launcher dies (see ``guard``).

    ``cgroup_procs`` (the sandbox's cgroup.procs files, opened by the launcher) are joined first,
    while still root and before anything of the sandbox's runs: a child that cannot join ends."""

    def setup() -> None:
        import resource

        for fd in cgroup_procs:
            try:
                os.write(fd, f"{os.getpid()}\n".encode())
            except OSError:
                os.write(2, b"mcpspec: bwrap could not join the sandbox's cgroup\n")
                os._exit(REFUSED)
        for which, value in limits:
            resource.setrlimit(which, (value, value))
        if identity is not None:
            uid, gid, groups = identity
            for cap in range(64):
                _prctl(PR_CAPBSET_DROP, cap)
            _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        if no_new_privs:
            _prctl(PR_SET_NO_NEW_PRIVS, 1)
        if announce >= 0:
            os.write(announce, f"bwrap {os.getpid()}\n".encode())
        else:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(REFUSED)

    return setup


def join_fresh_session_keyring(numbers: dict[str, int]) -> None:
    """Leave the session keyring the launcher was started with (a login session's, root's) for a
    new empty one, so that no process started from here possesses a key of it."""
    number = numbers.get(os.uname().machine)
    if number is None:
        raise Refusal(f"no keyctl syscall number for this machine ({os.uname().machine})")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(number), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None) == -1:
        code = ctypes.get_errno()
        if code != errno.ENOSYS:  # ENOSYS: a kernel without keyrings, so none to leave
            raise Refusal(f"cannot leave the inherited session keyring: {os.strerror(code)}")


def syscall_filter(programs: dict[str, str]) -> bytes:
    """The filter bwrap loads for this machine's architecture (built by mcpspec, only chosen here)."""
    machine = os.uname().machine
    if machine not in programs:
        raise Refusal(f"no syscall filter for this machine's architecture {machine} (the launcher has {', '.join(sorted(programs))})")
    return bytes.fromhex(programs[machine])


# ---------------------------------------------------------------- paths root may touch


class TrustedPaths:
    """Opens directories and files without following a link that an untrusted user planted."""

    def __init__(self, top: str = "/") -> None:
        self.euid = os.geteuid()
        self.top = top  # "/", or the root a test prepared with systemd-tmpfiles --root

    def _trusted_link(self, st: os.stat_result) -> bool:
        return st.st_uid == 0 or st.st_uid == self.euid

    def _components(self, path: str) -> list[str]:
        if not ABSOLUTE.fullmatch(path):
            raise Refusal(f"{path!r} is not an absolute path")
        return [part for part in path.split("/") if part not in ("", ".")]

    def open_dir(self, path: str, create: bool = False) -> int:
        """An O_PATH descriptor of directory ``path``; missing components are created root-owned, 0711."""
        return self._walk(self._components(path), create)

    def _walk(self, parts: list[str], create: bool) -> int:
        fd = os.open(self.top, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        hops = 0
        done: list[str] = []
        try:
            while parts:
                part = parts.pop(0)
                if part == "..":
                    raise Refusal(f"refusing /{'/'.join(done)}/..: a path with '..'")
                try:
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    if not create:
                        raise Refusal(f"/{'/'.join([*done, part])} does not exist") from None
                    os.close(owned_dir(fd, part, 0o711, None))
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    hops += 1
                    if hops > 20 or not self._trusted_link(st):
                        raise Refusal(f"refusing /{'/'.join([*done, part])}: it is a symbolic link")
                    target = os.readlink(part, dir_fd=fd)
                    parts[:0] = [p for p in target.split("/") if p not in ("", ".")]
                    if target.startswith("/"):
                        os.close(fd)
                        fd = os.open(self.top, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                        done = []
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    raise Refusal(f"/{'/'.join([*done, part])} is not a directory")
                next_fd = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = next_fd
                done.append(part)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def split(self, path: str) -> tuple[int, str]:
        """(descriptor of the parent directory, last component) of a file path."""
        parts = self._components(path)
        if not parts:
            raise Refusal(f"{path!r} is not a file")
        return self._walk(parts[:-1], False), parts[-1]

    def read_file(self, path: str, limit: int) -> bytes:
        """A regular file with a single link, read without following a link at any step."""
        fd = self.open_regular(path)
        try:
            data = os.read(fd, limit + 1)
            if len(data) > limit:
                raise Refusal(f"{path} is larger than {limit} bytes")
            return data
        finally:
            os.close(fd)

    def open_regular(self, path: str, access: int = os.O_RDONLY) -> int:
        """A descriptor of a regular file with a single link, opened without following a link at any step."""
        parent, name = self.split(path)
        try:
            fd = os.open(name, access | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        except OSError as exc:
            raise Refusal(f"refusing {path}: it is a symbolic link" if exc.errno == errno.ELOOP else f"cannot read {path}: {exc.strerror}") from None
        finally:
            os.close(parent)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Refusal(f"{path} is not a regular file")
            if st.st_nlink != 1:
                raise Refusal(f"{path} has {st.st_nlink} links (a hard link to it could stand for another file)")
            return fd
        except BaseException:
            os.close(fd)
            raise

    def open_append(self, path: str) -> int:
        """An append descriptor of a regular file with one link, ours alone, in a directory no one else
        may change (created 0600 when missing): a sandbox that could write there could swap the file."""
        parent, name = self.split(path)
        try:
            self.check_append_dir(os.fstat(parent), path)
        except Refusal:
            os.close(parent)
            raise
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600, dir_fd=parent)
        except OSError as exc:
            raise Refusal(f"refusing {path}: it is a symbolic link" if exc.errno == errno.ELOOP else f"cannot open {path} for appending: {exc.strerror}") from None
        finally:
            os.close(parent)
        try:
            self.check_append_file(os.fstat(fd), path)
        except Refusal:
            os.close(fd)
            raise
        return fd

    def check_append_dir(self, st: os.stat_result, path: str) -> None:
        if st.st_uid not in (0, self.euid) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            raise Refusal(f"refusing {path}: another user can write to its directory (it must belong to {self.owner} and not be group- or world-writable)")

    def check_append_file(self, st: os.stat_result, path: str) -> None:
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != self.euid or st.st_mode & 0o022:
            raise Refusal(f"refusing {path}: not a regular file with a single link, owned by {self.owner} and writable by no one else")

    def check_private_dir(self, st: os.stat_result, path: str) -> None:
        """A directory root makes others' directories in: no one else may change it."""
        if st.st_uid not in (0, self.euid) or st.st_mode & 0o022:
            raise Refusal(f"refusing {path}: another user can write to it (it must belong to {self.owner} and not be group- or world-writable)")

    @property
    def owner(self) -> str:
        return "root" if self.euid == 0 else "you"

    def append_problem(self, path: str) -> None:
        """What open_append would refuse, found without creating or opening anything."""
        try:
            parent, name = self.split(path)
        except Refusal as exc:
            raise Refusal(f"the directory {path.rsplit('/', 1)[0]} of {path} is missing ({exc})") from None
        try:
            self.check_append_dir(os.fstat(parent), path)
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return  # the launcher creates it
            self.check_append_file(st, path)
        finally:
            os.close(parent)

    def private_dir_problem(self, path: str) -> None:
        """What prepare_run_dir would refuse about ``path`` (missing is fine: the launcher makes it)."""
        try:
            fd = self.open_dir(path)
        except Refusal as exc:
            if str(exc).endswith(" does not exist"):
                return
            raise
        try:
            self.check_private_dir(os.fstat(fd), path)
        finally:
            os.close(fd)


def owned_dir(parent: int, name: str, mode: int, owner: tuple[int, int] | None) -> int:
    """Create (or open) directory ``name`` under ``parent`` without following a link; chmod and chown the open descriptor."""
    if not name or "/" in name or name in (".", ".."):
        raise Refusal(f"refusing the directory name {name!r}")
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
        created = True
    except FileExistsError:
        created = False
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        raise Refusal(f"refusing {name}: it is a symbolic link or not a directory") from None
    if created:
        # bwrap, running as the sandbox's uid, resolves a bound directory by its path: let it through.
        os.fchmod(fd, mode)
        if owner is not None:
            os.fchown(fd, *owner)
    return fd


def needed_tools(c: Config) -> list[str]:
    names = ["bwrap"]
    if c.proxy:
        names += ["squid", "socat"]
    if c.audit and c.audit_sink == "journal":
        names.append("systemd-cat")
    return names


def tool(name: str) -> str:
    found = shutil.which(name, path=SAFE_PATH)
    if found is None and name != "systemd-cat":
        raise Refusal(f"{name} is not installed (it enforces this server's sandbox)")
    return found or ""


def proxy_identity() -> tuple[int, int, list[int]]:
    import pwd

    try:
        entry = pwd.getpwnam("proxy")
    except KeyError:
        raise Refusal("the proxy user (Debian's squid package makes it) does not exist") from None
    if entry.pw_uid == 0:
        raise Refusal("the proxy user must not be root")
    return entry.pw_uid, entry.pw_gid, [entry.pw_gid]


@dataclass(frozen=True)
class Problem:
    """A prerequisite of the host that is missing or wrong; ``directory``: the host preparation file makes it."""

    text: str
    directory: bool = False


def host_problems(c: Config, paths: TrustedPaths) -> list[Problem]:
    """Every prerequisite of this server's launch that the host lacks, all at once (nothing is created)."""
    problems: list[Problem] = []

    def check(step: Callable[[], object], directory: bool = False) -> None:
        try:
            step()
        except Refusal as exc:
            problems.append(Problem(str(exc), directory))
        except OSError as exc:
            problems.append(Problem(f"{exc.strerror or exc}{': ' + exc.filename if exc.filename else ''}", directory))

    for name in needed_tools(c):
        check(functools.partial(tool, name))
    if c.proxy and paths.euid == 0:
        check(proxy_identity)
    if c.audit and c.audit_sink not in ("stderr", "journal"):
        check(functools.partial(paths.append_problem, c.audit_sink), directory=True)
    if any(mount.kind == "workspace" for mount in c.mounts):
        check(functools.partial(paths.private_dir_problem, c.workspace_root), directory=True)
    for secret in c.secrets:
        check(functools.partial(secret_value, paths, secret))
    for mount in c.mounts:
        if mount.kind == "host" and not os.path.lexists(os.path.join(paths.top, mount.source.lstrip("/"))):
            problems.append(Problem(f"mount source {mount.source} does not exist"))
    return problems


def problems_message(c: Config, problems: list[Problem], here: str) -> str:
    """One line naming every problem, and the host preparation file when it makes a missing directory."""
    text = f"the host is not ready for this server ({len(problems)} problem{'s' if len(problems) > 1 else ''}): "
    text += "; ".join(f"({number}) {problem.text}" for number, problem in enumerate(problems, 1))
    if c.host_prep and any(problem.directory for problem in problems):
        text += (f". The build's host preparation file creates the missing directories it lists, as root: systemd-tmpfiles --create "
                 f"{os.path.join(here, c.host_prep)} (mcpspec build writes it beside this launcher)")
    return text


def secret_value(paths: TrustedPaths, secret: Secret) -> bytes:
    """A secret's value, read from its provider as the launcher reads it at launch (mcpspec run masks it too)."""
    if secret.provider == "env":
        if not VARIABLE.fullmatch(secret.ref):
            raise Refusal(f"secret {secret.name}: bad variable name")
        if secret.ref not in os.environ:
            raise Refusal(f"secret {secret.name}: environment variable {secret.ref} is not set")
        return os.environ[secret.ref].encode()
    if secret.provider == "file":
        path = secret.ref
    elif secret.provider == "home":
        home = os.environ.get("HOME", "")
        if not ABSOLUTE.fullmatch(home):
            raise Refusal(f"secret {secret.name}: HOME is not set")
        path = os.path.join(home, secret.ref)
    elif secret.provider == "credential":
        directory = os.environ.get("CREDENTIALS_DIRECTORY", "")
        if not ABSOLUTE.fullmatch(directory) or "/" in secret.ref:
            raise Refusal(f"secret {secret.name}: no systemd credential {secret.ref}")
        path = os.path.join(directory, secret.ref)
    else:
        raise Refusal(f"secret {secret.name}: unknown provider {secret.provider}")
    try:
        return paths.read_file(path, SECRET_MAX_BYTES)
    except Refusal as exc:
        raise Refusal(f"secret {secret.name}: {exc}") from None


def memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# ---------------------------------------------------------------- the sandbox's cgroup
#
# RLIMIT_AS does not count memfd or shared-memory pages, RLIMIT_NPROC is shared by every process
# of a uid, and RLIMIT_CPU is per process: a cgroup per launch makes the spec's memory (swap
# included), pids and cpus limits real for everything the sandbox runs. The leaf is made below
# the launcher's own cgroup (so whatever bounds the launcher bounds the sandbox too), or, in
# cgroup v2 when that cgroup holds processes and so cannot enable controllers for children, beside
# it. bwrap joins the leaf in its preexec step, before it runs anything of the sandbox's.

CGROUP_MOUNTS = "/sys/fs/cgroup"
CPU_PERIOD_US = 100000
CGROUP_LEAF = re.compile(r"^mcpspec-[a-z0-9-]{1,40}-[0-9a-f]{16}$")
CGROUP_PATH = re.compile(r"^(?!(.*/)?\.\.?(/|$))/[A-Za-z0-9/._:@+-]*$")  # no "." or ".." part, nothing to quote


@dataclass(frozen=True)
class CgroupLimits:
    memory_bytes: int
    pids: int
    cpu_millis: int

    def cpu_quota_us(self) -> int:
        return max(1000, self.cpu_millis * CPU_PERIOD_US // 1000)  # the kernel's least quota is 1 ms a period

    def controllers(self) -> list[str]:
        return [name for name, value in (("memory", self.memory_bytes), ("pids", self.pids), ("cpu", self.cpu_millis)) if value]


class SandboxCgroup:
    """The leaves one launch made (one per cgroup v1 hierarchy, or the one v2 leaf) and their
    cgroup.procs descriptors, which bwrap's preexec step writes its own pid to."""

    def __init__(self, version: int, leaves: list[str]) -> None:
        self.version = version
        self.leaves = leaves
        self.procs = [os.open(f"{leaf}/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for leaf in leaves]

    def close(self) -> None:
        for fd in self.procs:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.procs = []

    def remove(self) -> None:
        """Kill whatever is still in the leaves, then remove them."""
        self.close()
        for leaf in self.leaves:
            remove_cgroup(leaf)
        self.leaves = []


def cgroup_mounts() -> tuple[str, dict[str, str]]:
    """(the cgroup2 mount point or "", {v1 controller: its hierarchy's mount point}), from mounts
    under /sys/fs/cgroup whose root is the hierarchy's own."""
    v2, v1 = "", dict[str, str]()
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or len(tail) < 3 or fields[3] != "/" or not fields[4].startswith(CGROUP_MOUNTS):
                continue
            if tail[0] == "cgroup2" and not v2:
                v2 = fields[4]
            elif tail[0] == "cgroup":
                for option in tail[2].split(","):
                    v1.setdefault(option, fields[4])
    return v2, v1


def own_cgroups() -> dict[str, str]:
    """The launcher's cgroup path per v1 controller, and under "" its cgroup v2 path."""
    found: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            _, _, rest = line.rstrip("\n").partition(":")
            controllers, _, path = rest.partition(":")
            if not CGROUP_PATH.fullmatch(path):
                continue
            for name in controllers.split(",") if controllers else [""]:
                found.setdefault(name.removeprefix("name="), path)
    return found


def write_cgroup_file(directory: str, name: str, value: str) -> None:
    fd = os.open(f"{directory}/{name}", os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def read_cgroup_file(directory: str, name: str) -> str:
    with open(f"{directory}/{name}", encoding="ascii", errors="replace") as handle:
        return handle.read()


def make_leaf(parent: str, name: str) -> str:
    """Create leaf ``name`` in cgroup directory ``parent`` (0755: root's alone to change)."""
    if not CGROUP_LEAF.fullmatch(name) or not os.path.isabs(parent):
        raise OSError(errno.EINVAL, "bad cgroup name", name)
    os.mkdir(name, 0o755, dir_fd=(fd := os.open(parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
    os.close(fd)
    return f"{parent}/{name}"


def remove_cgroup(leaf: str) -> None:
    """Kill every process in ``leaf`` (the sandbox is gone by now: this is for what is left), then rmdir it."""
    if not CGROUP_LEAF.fullmatch(os.path.basename(leaf)):
        return
    deadline = time.monotonic() + 5
    while True:
        with contextlib.suppress(OSError):
            write_cgroup_file(leaf, "cgroup.kill", "1")  # cgroup v2 (Linux 5.14): every process at once
        try:
            pids = [int(word) for word in read_cgroup_file(leaf, "cgroup.procs").split()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            kill_if_in(pid, leaf)
        try:
            os.rmdir(leaf)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def kill_if_in(pid: int, leaf: str) -> None:
    """SIGKILL ``pid`` if it is still the process in ``leaf`` (a pidfd pins it; a number reused since names another)."""
    pidfd = pidfd_of(pid)
    if pidfd < 0:
        return
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as handle:
            inside = any(line.rstrip("\n").endswith("/" + os.path.basename(leaf)) for line in handle)
        signal.pidfd_send_signal(pidfd, 0)  # still alive after the read: the read was of this process
        if inside:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


def sandbox_cgroup(server: str, limits: CgroupLimits, root: bool) -> tuple[SandboxCgroup | None, str]:
    """A cgroup for one launch holding ``limits``, or None and why none could be had."""
    wanted = limits.controllers()
    if not wanted:
        return None, ""
    name = f"mcpspec-{server if NAME.fullmatch(server) else 'sandbox'}-{secrets.token_hex(8)}"
    try:
        v2, v1 = cgroup_mounts()
        own = own_cgroups()
    except OSError as exc:
        return None, f"cannot read the launcher's cgroups: {exc.strerror}"
    reasons = []
    if v2 and "" in own:
        made, why = v2_leaf(os.path.normpath(v2 + own[""]), name, wanted, limits)
        if made is not None:
            return made, ""
        reasons.append(f"cgroup v2: {why}")
    else:
        reasons.append("cgroup v2: " + ("not mounted" if not v2 else "the launcher's cgroup path is not one it can use"))
    if root and all(c in v1 and c in own for c in wanted):
        made, why = v1_leaves(v1, own, name, wanted, limits)
        if made is not None:
            return made, ""
        reasons.append(f"cgroup v1: {why}")
    elif v1:
        reasons.append("cgroup v1: " + ("only root may make its cgroups" if not root else f"no {', '.join(c for c in wanted if c not in v1 or c not in own)} hierarchy"))
    return None, "; ".join(reasons)


def v2_leaf(base: str, name: str, wanted: list[str], limits: CgroupLimits) -> tuple[SandboxCgroup | None, str]:
    """A v2 leaf below the launcher's cgroup ``base`` (its controllers enabled there), or beside it
    when ``base`` holds processes (then its parent must delegate them)."""
    reasons: list[str] = []
    for parent in (base, os.path.dirname(base)):
        try:
            available = read_cgroup_file(parent, "cgroup.controllers").split()
        except OSError as exc:
            reasons.append(f"{parent}: {exc.strerror}")
            break  # above the mount, or gone: its parent is no cgroup either
        missing = [c for c in wanted if c not in available]
        if missing:
            reasons.append(f"{parent} offers no {' or '.join(missing)} controller")
            break  # a parent offers its children no more than it has
        try:
            enabled = read_cgroup_file(parent, "cgroup.subtree_control").split()
            if any(c not in enabled for c in wanted):
                write_cgroup_file(parent, "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted if c not in enabled))
            leaf = make_leaf(parent, name)
        except OSError as exc:
            reasons.append(f"{parent}: {exc.strerror}")
            continue
        try:
            if limits.memory_bytes:
                write_cgroup_file(leaf, "memory.max", str(limits.memory_bytes))
                with contextlib.suppress(FileNotFoundError):  # no swap accounting: nothing to swap to either
                    write_cgroup_file(leaf, "memory.swap.max", "0")
            if limits.pids:
                write_cgroup_file(leaf, "pids.max", str(limits.pids))
            if limits.cpu_millis:
                write_cgroup_file(leaf, "cpu.max", f"{limits.cpu_quota_us()} {CPU_PERIOD_US}")
            return SandboxCgroup(2, [leaf]), ""
        except OSError as exc:
            remove_cgroup(leaf)
            return None, f"{leaf}: {exc.strerror}"
    return None, "; ".join(reasons)


def v1_leaves(mounts: dict[str, str], own: dict[str, str], name: str, wanted: list[str], limits: CgroupLimits) -> tuple[SandboxCgroup | None, str]:
    """One leaf per v1 hierarchy (memory, pids, cpu), each below the launcher's cgroup in it."""
    leaves: list[str] = []
    try:
        for controller in wanted:
            leaf = make_leaf(os.path.normpath(mounts[controller] + own[controller]), name)
            leaves.append(leaf)
            if controller == "memory":
                write_cgroup_file(leaf, "memory.limit_in_bytes", str(limits.memory_bytes))
                if os.path.exists(f"{leaf}/memory.memsw.limit_in_bytes"):  # memory and swap together
                    write_cgroup_file(leaf, "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
                else:
                    write_cgroup_file(leaf, "memory.swappiness", "0")
            elif controller == "pids":
                write_cgroup_file(leaf, "pids.max", str(limits.pids))
            else:
                write_cgroup_file(leaf, "cpu.cfs_period_us", str(CPU_PERIOD_US))
                write_cgroup_file(leaf, "cpu.cfs_quota_us", str(limits.cpu_quota_us()))
        return SandboxCgroup(1, leaves), ""
    except OSError as exc:
        for leaf in leaves:
            remove_cgroup(leaf)
        return None, f"{exc.filename or ''}: {exc.strerror}"


class EgressSummary:
    """Squid's access log as the audit records it: one entry per distinct (result, method, host,
    port, status, scheme) with its number of requests, at most EGRESS_LOG_ENTRIES allowed and as many
    refused ones; requests past those are counted per result. The sandbox writes this log (a
    request a line), so neither its length nor its names may bound what the audit says of the
    rest, and the launcher reads it while the sandbox runs, freeing what it has read (a hole
    punched in the file: squid writes on at its own offset), so the log holds no more than a
    few seconds of requests on the host's disk or, where /tmp is a tmpfs, in its memory."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str, str, int | None, int | None, str | None], int] = {}
        self.kept = {"allowed": 0, "refused": 0}
        self.omitted = {"allowed": 0, "refused": 0}
        self.offset = 0  # how far the file is read; what is before the last newline is counted
        self.pending = b""

    def add(self, raw: bytes) -> None:
        fields = raw.decode("utf-8", "replace").split()
        if len(fields) < 5 or fields[1].startswith("NONE"):
            return
        code, port = fields[1].partition("/")[2], fields[4]
        result = "refused" if "DENIED" in fields[1] else "allowed"
        scheme = fields[5] if len(fields) > 5 and fields[5] != "-" else None
        key = (result, re.sub(r"[^A-Z]", "", fields[2])[:16], re.sub(r"[^A-Za-z0-9._%:-]", "?", fields[3])[:300],
               int(port) if port.isdigit() and len(port) < 6 else None, int(code) if code.isdigit() and len(code) < 4 else None,
               None if scheme is None else re.sub(r"[^a-z0-9_+.-]", "?", scheme.lower())[:32])
        if key in self.groups:
            self.groups[key] += 1
        elif self.kept[result] < EGRESS_LOG_ENTRIES:
            self.groups[key] = 1
            self.kept[result] += 1
        else:
            self.omitted[result] += 1

    def consume(self, fd: int, final: bool = False) -> None:
        """Count the lines written since the last call, then free the file's pages before them."""
        while chunk := os.pread(fd, 1 << 20, self.offset):
            self.offset += len(chunk)
            *lines, self.pending = (self.pending + chunk).split(b"\n")
            for line in lines:
                self.add(line)
            if len(self.pending) > 1 << 16:  # no log line is this long: count it and go on
                self.add(self.pending)
                self.pending = b""
        if final and self.pending:
            self.add(self.pending)
            self.pending = b""
        done = (self.offset - len(self.pending)) // PAGE_BYTES * PAGE_BYTES
        if done and ctypes.CDLL(None, use_errno=True).fallocate(fd, FALLOC_PUNCH_HOLE, ctypes.c_long(0), ctypes.c_long(done)) != 0:
            pass  # a filesystem without holes: the log keeps its pages, the audit is whole all the same

    def result(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        entries = [{"result": r, "method": m, "host": h, "port": p, "status": c, "scheme": k, "requests": n}
                   for (r, m, h, p, c, k), n in self.groups.items()]
        return entries, dict(self.omitted)


# ---------------------------------------------------------------- the launcher


class Launcher:
    def __init__(self, config: Config) -> None:
        self.c = config
        self.root = os.geteuid() == 0
        self.paths = TrustedPaths()
        self.status = 0
        self.error = ""
        self.stop_signal = 0
        self.ended_by = ""
        self.agent = ""
        self.run_id = ""
        self.run_dir = ""
        self.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.args: list[str] = []
        self.fds: list[int] = []
        self.shim: list[str] = []
        self.state = ""
        self.egress = EgressSummary()
        self.egress_fd = -1
        self.bridge_dir = ""
        self.squid_service = f"mcpspec{secrets.token_hex(8)}"
        self.proxy_processes: list[subprocess.Popen[bytes]] = []
        self.sandbox: subprocess.Popen[bytes] | None = None
        self.cgroup: SandboxCgroup | None = None
        self.cgroup_version = ""  # what held the limits: "v1" or "v2" ("" none: rlimits alone, or no limit)
        self.audit_fd = -1
        self.tools: dict[str, str] = {}
        self.guardian = self.guardian_control = self.guardian_report = self.info_w = 0
        self.host_uid, self.host_gid = os.geteuid(), os.getegid()
        if self.root:
            self.host_uid = config.uid or FALLBACK_ID
            self.host_gid = config.gid or FALLBACK_ID
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    # -- signals: recorded until the sandbox runs, then they stop it
    def _on_signal(self, signum: int, _frame: object) -> None:
        if not self.stop_signal:
            self.stop_signal = signum
        with contextlib.suppress(OSError):
            os.write(self.wake_w, b"s")

    def run(self, early_signals: list[int]) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        if early_signals and not self.stop_signal:  # one that came before these handlers were in place
            self.stop_signal = early_signals[0]
        try:
            join_fresh_session_keyring(self.c.keyctl)
            self.prepare()
            if self.stop_signal:
                raise Stopped()
            self.info_w = self.keep(self.start_guardian())
            self.make_cgroup()
            if self.c.proxy:
                self.start_proxy()
            self.launch()
            self.supervise()
        except Stopped:
            self.status = 128 + self.stop_signal
            self.ended_by = "signal"
        except (Refusal, OSError) as exc:
            self.error = str(exc) if isinstance(exc, Refusal) else f"{exc.strerror or exc}{': ' + exc.filename if exc.filename else ''}"
            self.status = REFUSED
            sys.stderr.write(f"mcpspec {self.c.server}: {self.error}\n")
        except Exception as exc:  # noqa: BLE001 (a bug here must still stop the sandbox, say why and exit 125)
            self.error = f"internal error: {type(exc).__name__}: {exc}"
            self.status = REFUSED
            sys.stderr.write(f"mcpspec {self.c.server}: {self.error}\n")
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            self.cleanup()
        return self.status

    # -- before anything starts
    def prepare(self) -> None:
        problems = host_problems(self.c, self.paths)
        if problems:
            raise Refusal(problems_message(self.c, problems, os.path.dirname(os.path.realpath(sys.argv[0]))))
        self.tools = {name: self.tool(name) for name in self.needed_tools()}
        self.agent = os.environ.get("MCPSPEC_AGENT") or self.c.default_agent
        if self.c.agents and self.agent not in self.c.agents:
            raise Refusal(f"set MCPSPEC_AGENT to one of: {' '.join(self.c.agents)}")
        if not NAME.fullmatch(self.agent):
            raise Refusal("MCPSPEC_AGENT must be a lowercase name")
        self.run_id = os.environ.get("MCPSPEC_RUN_ID") or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}"
        if not RUN_ID.fullmatch(self.run_id):
            raise Refusal("MCPSPEC_RUN_ID must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}")
        if self.c.audit and self.c.audit_sink not in ("stderr", "journal"):
            self.audit_fd = self.paths.open_append(self.c.audit_sink)
        secret_args: list[str] = []
        for secret in self.c.secrets:  # every secret is read before anything is created for the run
            secret_args += self.secret(secret)
        self.base_args()
        for mount in self.c.mounts:
            self.mount(mount)
        if self._run_fd >= 0:
            os.close(self._run_fd)
            self._run_fd = -1
        self.environment()
        self.args += secret_args
        for command in self.c.masks:
            self.mask(command)
        if self.c.workdir is not None:
            self.args += ["--chdir", self.c.workdir]

    def needed_tools(self) -> list[str]:
        return needed_tools(self.c)

    def tool(self, name: str) -> str:
        return tool(name)

    def base_args(self) -> None:
        c = self.c
        # --as-pid-1: the server is the namespace's init, so when it dies (of --die-with-parent or
        # anything else) the kernel ends every process left in the sandbox, daemons included.
        args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--as-pid-1", "--new-session",
                "--cap-drop", "ALL", "--uid", str(c.uid), "--gid", str(c.gid), "--hostname", f"mcp-{c.server}"]
        if c.share_net:
            args.append("--share-net")
        args += ["--seccomp", str(self.keep(memfd("seccomp", syscall_filter(c.seccomp))))]
        args += ["--ro-bind", "/usr", "/usr"]
        for top in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
            path = f"/{top}"
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "localtime"):
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        passwd = self.keep(memfd("passwd", f"mcp:x:{c.uid}:{c.gid}::/nonexistent:/usr/sbin/nologin\n".encode()))
        group = self.keep(memfd("group", f"mcp:x:{c.gid}:\n".encode()))
        args += ["--ro-bind-data", str(passwd), "/etc/passwd", "--ro-bind-data", str(group), "/etc/group",
                 "--proc", "/proc", "--dev", "/dev",
                 "--size", str(SHM_BYTES), "--perms", "1777", "--tmpfs", "/dev/shm",
                 "--size", str(TMP_BYTES), "--perms", "1777", "--tmpfs", "/tmp", "--dir", "/run/mcpspec"]
        self.args = args

    def keep(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def prepare_run_dir(self) -> int:
        """The run's directory: root-owned (0711) down to it, so no sandbox can plant or race in it."""
        owner = None if not self.root else (0, 0)
        parent = self.paths.open_dir(self.c.workspace_root, create=True)
        names = ([self.agent] if self.c.per_agent else []) + [self.run_id]
        path = self.c.workspace_root.rstrip("/")
        try:
            for name in names:
                self.check_not_writable_by_others(parent, path)
                fd = owned_dir(parent, name, 0o711, owner)
                os.close(parent)
                parent = fd
                path = f"{path}/{name}"
            self.check_not_writable_by_others(parent, path)  # the workspace dirs are made in it
            self.run_dir = path
            return parent
        except BaseException:
            os.close(parent)
            raise

    def check_not_writable_by_others(self, fd: int, path: str) -> None:
        self.paths.check_private_dir(os.fstat(fd), path)

    def mount(self, mount: Mount) -> None:
        bind = "--bind" if mount.mode == "rw" else "--ro-bind"
        if mount.kind == "scratch":
            self.args += ["--size", str(mount.size), "--perms", "0700", "--tmpfs", mount.target]
            if mount.mode == "ro":
                self.args += ["--remount-ro", mount.target]
        elif mount.kind == "workspace":
            run = self.prepare_run_dir_once()
            owner = (self.host_uid, self.host_gid) if self.root else None
            fd = owned_dir(run, mount.source, 0o700, owner)
            self.args += [bind + "-fd", str(self.keep(fd)), mount.target]
        else:
            source = mount.source
            if mount.kind == "home":
                home = os.environ.get("HOME", "")
                if not ABSOLUTE.fullmatch(home):
                    raise Refusal("HOME is not set (a mount is under ~)")
                source = os.path.join(home, source)
            if not self.reachable(source):
                raise Refusal(f"mount source {source} does not exist or the sandbox's uid cannot reach it")
            # bwrap resolves a host path as the sandbox's own uid: it reaches only what that uid may.
            self.args += [bind, source, mount.target]

    _run_fd = -1

    def reachable(self, path: str) -> bool:
        """Whether the sandbox's host uid (which bwrap runs as) can reach ``path``."""
        if not self.root:
            return os.path.lexists(path)
        groups = os.getgroups()
        os.setgroups([])  # bwrap runs with no supplementary group (root's own would open more)
        os.setegid(self.host_gid)
        os.seteuid(self.host_uid)
        try:
            return os.path.lexists(path)
        finally:
            os.seteuid(0)
            os.setegid(0)
            os.setgroups(groups)

    def prepare_run_dir_once(self) -> int:
        # Not kept for bwrap: a descriptor of a host directory inside the sandbox is a way out ("..").
        if self._run_fd < 0:
            self._run_fd = self.prepare_run_dir()
        return self._run_fd

    def environment(self) -> None:
        c = self.c
        self.args.append("--clearenv")
        names = list(os.environ) if c.env_mode == "all" else c.inherit
        for name in names:
            if name in os.environ and VARIABLE.fullmatch(name):
                self.args += ["--setenv", name, os.environ[name]]
        for name, value in c.setenv:
            self.args += ["--setenv", name, value]

    def secret(self, secret: Secret) -> list[str]:
        """The bwrap arguments that hand one secret in (its value travels in a memfd, never an argument)."""
        data = secret_value(self.paths, secret)
        args: list[str] = []
        if secret.file is not None:
            fd = self.keep(memfd(secret.name, data))
            args += ["--perms", "0400", "--ro-bind-data", str(fd), secret.file]
        if secret.env is not None:
            if not VARIABLE.fullmatch(secret.env):
                raise Refusal(f"secret {secret.name}: bad variable name")
            value = data.rstrip(b"\n")
            if b"\0" in value:
                raise Refusal(f"secret {secret.name}: a NUL byte cannot go into an environment variable")
            fd = self.keep(memfd(secret.name, value))
            self.shim.append(f"IFS= read -r -d '' {secret.env} <&{fd} || :; exec {fd}<&-; export {secret.env}; ")
        return args

    def mask(self, command: str) -> None:
        """Hide a denied command (a name in the PATH directories, or an absolute path)."""
        if command.startswith("/"):
            if os.path.lexists(command):
                self.args += ["--ro-bind", "/dev/null", command]
            return
        for directory in ("/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin"):
            if os.path.islink(directory):
                continue  # /bin -> usr/bin: the /usr entry covers it
            if os.path.lexists(f"{directory}/{command}"):
                self.args += ["--ro-bind", "/dev/null", f"{directory}/{command}"]

    # -- the cgroup that makes memory, pids and cpus real
    def make_cgroup(self) -> None:
        """The sandbox's cgroup; without one, refuse, unless MCPSPEC_CGROUP=optional (use one when it can be had)
        or off (never) accepts the rlimits alone."""
        c = self.c
        policy = os.environ.get("MCPSPEC_CGROUP") or "required"
        if policy not in ("required", "optional", "off"):
            raise Refusal("MCPSPEC_CGROUP must be required, optional or off")
        limits = CgroupLimits(c.memory_bytes, c.pids, c.cpu_millis)
        if policy == "off":
            self.cgroup, why = None, "MCPSPEC_CGROUP=off" if limits.controllers() else ""
        else:
            self.cgroup, why = sandbox_cgroup(c.server, limits, self.root)
        if self.cgroup is not None:
            self.cgroup_version = f"v{self.cgroup.version}"
            os.write(self.guardian_control, "".join(f"cgroup {leaf}\n" for leaf in self.cgroup.leaves).encode())
            return
        if not why:
            return  # no limit to hold
        if policy == "required":
            raise Refusal(f"no cgroup can hold this server's memory, pids and cpus limits ({why}); run the launcher as root or "
                          "in a cgroup v2 subtree delegated to its user, or set MCPSPEC_CGROUP=optional to accept rlimits alone "
                          "(RLIMIT_AS does not count memfd or shared memory)")
        cpu = "by a budget of cpus x max_lifetime" if c.cpu_seconds else "not at all (no max_lifetime for a budget)"
        sys.stderr.write(f"mcpspec {c.server}: no cgroup ({why}): memory is bounded by RLIMIT_AS alone, which does not count memfd "
                         f"or shared memory; processes by RLIMIT_NPROC of the whole uid; CPU {cpu}\n")
        sys.stderr.flush()

    # -- the egress proxy: squid behind a unix socket only this sandbox is given
    def start_proxy(self) -> None:
        self.state = tempfile.mkdtemp(prefix=f"mcpspec-{self.c.server}-{self.run_id}.", dir="/tmp")
        # What the guardian removes if this launcher is killed: the proxy's state and shared memory.
        os.write(self.guardian_control, f"state {self.state}\nshm {self.squid_service}-\n".encode())
        os.chmod(self.state, 0o711)
        proxy_ids = self.proxy_identity()
        owner = None if proxy_ids is None else proxy_ids[:2]
        state_fd = os.open(self.state, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        os.close(owned_dir(state_fd, "squid", 0o700, owner))
        # The bridge's socket sits in a directory with an unguessable name inside this root-owned,
        # unlistable one, reachable by the proxy user and the sandbox's group only; once the sandbox
        # has it mounted, the name is removed, so no path on the host leads to it any more.
        self.bridge_dir = f"{self.state}/{secrets.token_hex(16)}"
        bridge_owner = None if proxy_ids is None else (proxy_ids[0], self.host_gid)
        bridge_fd = owned_dir(state_fd, os.path.basename(self.bridge_dir), 0o2710 if self.root else 0o700, bridge_owner)
        hosts = os.environ.get("MCPSPEC_EGRESS_HOSTS_FILE", "/etc/hosts")
        if not re.fullmatch(r"/[A-Za-z0-9/._-]+", hosts) or not os.access(hosts, os.R_OK):
            raise Refusal("MCPSPEC_EGRESS_HOSTS_FILE must be a readable absolute path")
        here = os.path.dirname(os.path.realpath(sys.argv[0]))
        rules = self.paths.read_file(os.path.join(here, f"{self.c.server}.squid.conf"), 1 << 22).decode()
        host_acl = "".join(f"acl host_addresses dst {network}\n" for network in host_networks())
        log = os.open(f"{self.state}/proxy.log", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        port = 0
        squid: subprocess.Popen[bytes] | None = None
        for _attempt in range(5):
            port = free_port()
            conf = (f"http_port 127.0.0.1:{port}\npid_filename {self.state}/squid/squid.pid\n"
                    f"cache_log {self.state}/squid/cache.log\ncoredump_dir {self.state}/squid\nhosts_file {hosts}\n"
                    f"{host_acl}acl proxy_port port {port}\n{rules}access_log stdio:{self.state}/squid/access.log mcpspec\n")
            with open(f"{self.state}/squid.conf", "w", encoding="utf-8") as handle:
                handle.write(conf)
            os.chmod(f"{self.state}/squid.conf", 0o644)
            # A service name of its own: squid names its shared-memory segments after it, and
            # another squid's stale segments (of another user, say) would stop this one starting.
            squid = self.spawn_helper([self.tools["squid"], "-N", "-n", self.squid_service, "-f", f"{self.state}/squid.conf"], proxy_ids, log)
            if self.wait_for(functools.partial(self.squid_accepts, port), squid):
                break
            if self.stop_signal:
                raise Stopped()
            squid.kill()
            squid.wait()
            self.proxy_processes.remove(squid)
            squid = None
        if squid is None:
            lines = self.squid_log().strip().splitlines() or ["no log"]
            why = next((line for line in lines if "FATAL" in line or "ERROR" in line), lines[-1])
            raise Refusal("the egress proxy (squid) did not start: " + why[:300])
        sock = f"{self.bridge_dir}/egress.sock"
        # The bridge forks a host process per connection, outside the sandbox's cgroup, and the
        # server can connect to the socket directly: bound them, or its pids and memory limits
        # would not hold (each relayed connection costs the sandbox a pid of its own anyway).
        children = min(self.c.pids or BRIDGE_CHILDREN, BRIDGE_CHILDREN)
        bridge = self.spawn_helper([self.tools["socat"], f"UNIX-LISTEN:{sock},fork,max-children={children},mode={'0660' if self.root else '0600'}",
                                    f"TCP:127.0.0.1:{port}"], proxy_ids, log)
        if not self.wait_for(lambda: is_socket(bridge_fd, "egress.sock"), bridge):
            if self.stop_signal:
                raise Stopped()
            raise Refusal("the egress bridge (socat) did not start")
        os.close(bridge_fd)
        os.close(state_fd)
        # bwrap resolves the path as the sandbox's uid: the socket's group (from the setgid directory) lets it in.
        self.args += ["--bind", sock, SOCKET_INSIDE, "--ro-bind", self.tools["socat"], "/run/mcpspec/socat"]
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            self.args += ["--setenv", name, f"http://127.0.0.1:{PROXY_PORT_INSIDE}"]
        self.shim.append(f"/run/mcpspec/socat TCP-LISTEN:{PROXY_PORT_INSIDE},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:{SOCKET_INSIDE} & ")
        # Start the server once the relay listens (state 0A in /proc/net/tcp), at most 5 s later.
        self.shim.append(f"for _ in {{1..250}}; do while read -r _ a _ s _; do [[ $a == *:{PROXY_PORT_INSIDE:04X} && $s == 0A ]] && break 2; done < /proc/net/tcp; sleep 0.02; done; ")

    def proxy_identity(self) -> tuple[int, int, list[int]] | None:
        return proxy_identity() if self.root else None

    def spawn_helper(self, argv: list[str], identity: tuple[int, int, list[int]] | None, log: int) -> "subprocess.Popen[bytes]":
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env={"PATH": SAFE_PATH},
                                   preexec_fn=child_setup(os.getpid(), identity, [], True), start_new_session=True)
        self.proxy_processes.append(process)
        return process

    def squid_accepts(self, port: int) -> bool:
        return "Accepting HTTP Socket connections at conn" in (log := self.squid_log()) and f"local=127.0.0.1:{port} " in log

    def squid_log(self) -> str:
        try:
            return self.paths.read_file(f"{self.state}/squid/cache.log", 1 << 20).decode("utf-8", "replace")
        except Refusal:
            return ""

    def wait_for(self, ready: Callable[[], bool], process: "subprocess.Popen[bytes]", seconds: float = 10.0) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return True
            if process.poll() is not None or self.stop_signal:
                return False
            time.sleep(0.02)
        return False

    # -- the sandbox
    def launch(self) -> None:
        c = self.c
        inner = list(c.command)
        if self.shim:
            # The shim's own copy of bash: a process.deny entry may hide the one in /usr.
            self.args += ["--ro-bind", "/bin/bash" if os.path.exists("/bin/bash") else "/usr/bin/bash", "/run/mcpspec/bash"]
            script = "".join(self.shim) + 'exec /usr/bin/env -u SHLVL -- "$@"'
            inner = ["/run/mcpspec/bash", "-c", script, "mcpspec-shim", *inner]
        # The root is bwrap's own tmpfs with nothing of the host on it: read-only, so the only
        # writable places are the declared mounts, /tmp and /dev/shm, each of a bounded size.
        self.args += ["--remount-ro", "/"]
        if any("\0" in arg for arg in self.args):  # one NUL would split an argument in two for bwrap
            raise Refusal("a value holds a NUL byte")
        args_fd = self.keep(memfd("args", b"".join(arg.encode() + b"\0" for arg in self.args)))
        limits = []
        import resource

        if c.memory_bytes:
            limits.append((resource.RLIMIT_AS, c.memory_bytes))
        cgroup = self.cgroup
        if c.pids and (cgroup is None or not cgroup.leaves):  # the cgroup's pids.max is the sandbox's own, not the whole uid's
            limits.append((resource.RLIMIT_NPROC, c.pids))
        if c.cpu_seconds:
            limits.append((resource.RLIMIT_CPU, c.cpu_seconds))
        identity: tuple[int, int, list[int]] | None = (self.host_uid, self.host_gid, []) if self.root else None
        relay = c.idle_seconds > 0
        info_w = self.info_w
        if self.stop_signal:
            raise Stopped()
        self.sandbox = subprocess.Popen(
            [self.tools["bwrap"], "--info-fd", str(info_w), "--args", str(args_fd), "--", *inner],
            stdin=subprocess.PIPE if relay else None, stdout=subprocess.PIPE if relay else None,
            env={"PATH": SAFE_PATH}, pass_fds=self.fds,
            preexec_fn=child_setup(os.getpid(), identity, limits, False, announce=self.guardian_control,
                                   cgroup_procs=tuple(cgroup.procs) if cgroup is not None else ()))
        if cgroup is not None:
            cgroup.close()
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        with os.fdopen(self.guardian_report, "rb") as report:
            child = int(report.readline() or b"0")  # the sandbox's pid 1, from bwrap's info (0: none)
        if not child:
            code = self.sandbox.wait()
            raise Refusal(f"bwrap could not create the sandbox (status {code}; its message is above)")
        if self.bridge_dir:
            self.seal_bridge(child)

    def start_guardian(self) -> int:
        """Fork the guardian; return the descriptor bwrap writes its info to.

        bwrap's own parent-death signal for the sandbox is armed a moment after the sandbox
        exists, so a launcher killed in that moment could leave the sandbox running. The
        guardian is a process of its own session that learns the sandbox's pid 1 from bwrap
        and kills it (which ends every process of the sandbox) when this launcher dies
        without saying it is done: its end of a pipe from the launcher reads end-of-file.
        """
        info_r, info_w = os.pipe2(os.O_CLOEXEC)
        control_r, control_w = os.pipe2(os.O_CLOEXEC)
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            try:
                guard(info_r, control_r, report_w)
            finally:
                os._exit(0)
        for fd in (info_r, control_r, report_w):
            os.close(fd)
        self.guardian, self.guardian_control, self.guardian_report = pid, control_w, report_r
        return info_w

    def release_guardian(self) -> None:
        """Tell the guardian the launcher ends in order (the sandbox is already gone)."""
        if self.guardian:
            with contextlib.suppress(OSError):
                os.write(self.guardian_control, b"done\n")
            os.close(self.guardian_control)
            os.waitpid(self.guardian, 0)
            self.guardian = 0

    def seal_bridge(self, child: int) -> None:
        """Remove the socket's host path once the sandbox has it mounted."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.stop_signal:
            try:
                with open(f"/proc/{child}/mountinfo", encoding="utf-8", errors="replace") as handle:
                    if any(line.split()[4].endswith(SOCKET_INSIDE) for line in handle if len(line.split()) > 4):
                        break
            except OSError:
                return  # the sandbox is already gone
            time.sleep(0.005)
        else:
            return
        shutil.rmtree(self.bridge_dir, ignore_errors=True)

    def supervise(self) -> None:
        assert self.sandbox is not None
        sandbox = self.sandbox
        pidfd = os.pidfd_open(sandbox.pid)
        selector = selectors.DefaultSelector()
        selector.register(pidfd, selectors.EVENT_READ, "exit")
        selector.register(self.wake_r, selectors.EVENT_READ, "signal")
        relay = Relay(sandbox) if self.c.idle_seconds else None
        if relay is not None:
            relay.register(selector)
        now = time.monotonic()
        lifetime_end = now + self.c.lifetime_seconds if self.c.lifetime_seconds else None
        kill_at: float | None = None
        next_cpu = now + CPU_POLL_SECONDS
        next_log = now + EGRESS_LOG_POLL_SECONDS
        exited = False
        while not exited:
            now = time.monotonic()
            deadlines = [d for d in (lifetime_end, kill_at, next_cpu if self.c.cpu_seconds else None, next_log if self.state else None) if d is not None]
            if relay is not None and kill_at is None:
                deadlines.append(relay.idle_deadline(self.c.idle_seconds))
            soonest = min(deadlines, default=float("inf"))
            timeout = None if soonest == float("inf") else max(0.0, soonest - now)
            if relay is not None and relay.ready:
                timeout = 0.0 if timeout is None else min(timeout, 0.05)
            for key, _events in selector.select(timeout):
                if key.data == "exit":
                    exited = True
                elif key.data == "signal":
                    drain(self.wake_r)
                elif relay is not None:
                    relay.handle(key.data, selector)
            if relay is not None:
                for tag in list(relay.ready.values()):
                    relay.handle(tag, selector)
            now = time.monotonic()
            if exited:
                break
            if self.stop_signal and kill_at is None:
                kill_at = self.stop(128 + self.stop_signal, "signal")
            if lifetime_end is not None and now >= lifetime_end and kill_at is None:
                kill_at = self.stop(143, "max_lifetime")
            if relay is not None and kill_at is None and now >= relay.idle_deadline(self.c.idle_seconds):
                kill_at = self.stop(143, "idle_timeout")
            if self.c.cpu_seconds and now >= next_cpu:
                next_cpu = now + CPU_POLL_SECONDS
                if kill_at is None and sandbox_cpu_seconds(sandbox.pid) > self.c.cpu_seconds:
                    kill_at = self.stop(128 + signal.SIGXCPU, "cpu_budget")
            if self.state and now >= next_log:
                next_log = now + EGRESS_LOG_POLL_SECONDS
                self.read_egress_log()
            if kill_at is not None and now >= kill_at:
                sandbox.kill()
                kill_at = now + 3600
        code = sandbox.wait()
        if relay is not None:
            relay.finish(lambda: bool(self.stop_signal))
        os.close(pidfd)
        if not self.ended_by and self.stop_signal:  # the signal and the sandbox's end came in one wake-up
            self.status, self.ended_by = 128 + self.stop_signal, "signal"
        if not self.ended_by:
            self.status = code if code >= 0 else 128 - code

    def stop(self, status: int, why: str) -> float:
        """Ask the sandbox to end (bwrap's death takes every process inside with it)."""
        assert self.sandbox is not None
        self.status = status
        self.ended_by = why
        with contextlib.suppress(ProcessLookupError):
            self.sandbox.terminate()
        return time.monotonic() + STOP_GRACE_SECONDS

    # -- after
    def cleanup(self) -> None:
        if self.sandbox is not None and self.sandbox.poll() is None:
            self.sandbox.kill()
            self.sandbox.wait()
        if self.cgroup is not None:
            self.cgroup.remove()
        self.release_guardian()
        for process in self.proxy_processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if self.proxy_processes:
            remove_shared_memory(f"{self.squid_service}-")
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        if self.c.audit:
            self.write_audit()
        if self.state:
            shutil.rmtree(self.state, ignore_errors=True)

    def read_egress_log(self, final: bool = False) -> None:
        """Count what the proxy logged since the last call (see ``EgressSummary``)."""
        if not self.state:
            return
        if self.egress_fd < 0:
            try:
                self.egress_fd = self.paths.open_regular(f"{self.state}/squid/access.log", os.O_RDWR)
            except Refusal:
                return  # not written yet
        self.egress.consume(self.egress_fd, final)
        if final:
            os.close(self.egress_fd)
            self.egress_fd = -1

    def write_audit(self) -> None:
        self.read_egress_log(final=True)
        egress, omitted = self.egress.result()
        record = {
            "event": "launch", "project": self.c.project, "server": self.c.server, "agent": self.agent or None,
            "run_id": self.run_id or None, "started": self.started,
            "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "exit_status": self.status,
            "ended_by": self.ended_by or ("refused" if self.status == REFUSED and self.error else "exit"),
            "error": self.error or None, "run_dir": self.run_dir or None,
            "mounts": self.c.audit_mounts, "egress": self.c.audit_egress, "egress_log": egress, "egress_log_omitted": omitted,
            "cgroup": self.cgroup_version or None,
        }
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=True) + "\n"
        if self.audit_fd >= 0:
            try:
                os.write(self.audit_fd, line.encode())
            except OSError as exc:
                sys.stderr.write(f"mcpspec {self.c.server}: cannot append to {self.c.audit_sink}: {exc.strerror}\n")
            os.close(self.audit_fd)
        elif self.c.audit_sink == "journal" and self.tools.get("systemd-cat"):
            subprocess.run([self.tools["systemd-cat"], "-t", f"mcpspec-{self.c.server}"], input=line.encode(),
                           env={"PATH": SAFE_PATH}, check=False)
        else:
            sys.stderr.write(line)
            sys.stderr.flush()

class Stopped(Exception):
    """A signal arrived before the sandbox started: nothing is launched."""


class Relay:
    """Copies the client's stdio to the sandbox and back, and knows when the session is idle:
    no byte either way and no request of the client's still waiting for its answer (or cancelled)."""

    def __init__(self, sandbox: "subprocess.Popen[bytes]") -> None:
        assert sandbox.stdin is not None and sandbox.stdout is not None
        self.to_server = sandbox.stdin.fileno()
        self.from_server = sandbox.stdout.fileno()
        self.sandbox = sandbox
        self.pending: set[str] = set()
        self.last = time.monotonic()
        self.client_buffer = b""
        self.server_buffer = b""
        self.outbox = b""
        self.inbox = b""
        self.paused: set[int] = set()  # readers stopped until their buffer drains
        self.ready: dict[int, str] = {}  # descriptors epoll refuses (a file, /dev/null): always ready
        self.client_open = True
        for fd in (0, 1, self.to_server, self.from_server):
            os.set_blocking(fd, False)

    def watch(self, selector: selectors.BaseSelector, fd: int, events: int, tag: str) -> None:
        try:
            selector.register(fd, events, tag)
        except PermissionError:  # a regular file or /dev/null never blocks
            self.ready[fd] = tag

    def unwatch(self, selector: selectors.BaseSelector, fd: int) -> None:
        if self.ready.pop(fd, None) is None:
            selector.unregister(fd)

    def watched(self, selector: selectors.BaseSelector, fd: int) -> bool:
        return fd in self.ready or fd in selector.get_map()

    def register(self, selector: selectors.BaseSelector) -> None:
        self.watch(selector, 0, selectors.EVENT_READ, "client")
        self.watch(selector, self.from_server, selectors.EVENT_READ, "server")

    def idle_deadline(self, seconds: int) -> float:
        return float("inf") if self.pending else self.last + seconds

    def handle(self, tag: str, selector: selectors.BaseSelector) -> None:
        self.last = time.monotonic()
        if tag == "client":
            data = read_some(0)
            if data is None:
                return
            if not data:
                self.unwatch(selector, 0)
                self.client_open = False
                if not self.inbox:
                    self.close_server_input()
                return
            self.track(data, from_client=True)
            self.inbox += data
            self.flush(self.to_server, selector, "to-server")
            if len(self.inbox) > RELAY_BUFFER_BYTES and self.watched(selector, 0):  # a slow reader: stop reading the writer
                self.unwatch(selector, 0)
                self.paused.add(0)
        elif tag == "server":
            data = read_some(self.from_server)
            if data is None:
                return
            if not data:
                self.unwatch(selector, self.from_server)
                return
            self.track(data, from_client=False)
            self.outbox += data
            self.flush(1, selector, "to-client")
            if len(self.outbox) > RELAY_BUFFER_BYTES and self.watched(selector, self.from_server):
                self.unwatch(selector, self.from_server)
                self.paused.add(self.from_server)
        elif tag in ("to-server", "to-client"):
            self.flush(self.to_server if tag == "to-server" else 1, selector, tag)

    def flush(self, fd: int, selector: selectors.BaseSelector, tag: str) -> None:
        buffer = self.inbox if tag == "to-server" else self.outbox
        try:
            written = os.write(fd, buffer) if buffer else 0
        except BlockingIOError:
            written = 0
        except OSError:
            written = len(buffer)  # the reader is gone: drop what it will never read
        buffer = buffer[written:]
        if tag == "to-server":
            self.inbox = buffer
        else:
            self.outbox = buffer
        registered = self.watched(selector, fd)
        if buffer and not registered:
            self.watch(selector, fd, selectors.EVENT_WRITE, tag)
        elif not buffer and registered:
            self.unwatch(selector, fd)
        if tag == "to-server" and not buffer and not self.client_open:
            self.close_server_input()
        source = 0 if tag == "to-server" else self.from_server
        if source in self.paused and len(buffer) <= RELAY_BUFFER_BYTES // 2:
            self.paused.discard(source)
            self.watch(selector, source, selectors.EVENT_READ, "client" if source == 0 else "server")

    def close_server_input(self) -> None:
        if self.sandbox.stdin is not None and not self.sandbox.stdin.closed:
            self.sandbox.stdin.close()

    def track(self, data: bytes, from_client: bool) -> None:
        """Follow JSON-RPC ids: a client request is pending until the server answers it or the client cancels it."""
        buffered = (self.client_buffer if from_client else self.server_buffer) + data
        *lines, rest = buffered.split(b"\n")
        if from_client:
            self.client_buffer = rest[-(1 << 20):]
        else:
            self.server_buffer = rest[-(1 << 20):]
        for line in lines:
            for message in json_messages(line):
                if from_client and message.get("method") == "notifications/cancelled":
                    params = message.get("params")
                    if isinstance(params, dict):
                        self.pending.discard(json.dumps(params.get("requestId")))
                elif from_client and "method" in message and "id" in message:
                    self.pending.add(json.dumps(message["id"]))
                elif not from_client and "method" not in message and ("result" in message or "error" in message):
                    self.pending.discard(json.dumps(message.get("id")))

    def finish(self, stopping: Callable[[], bool], seconds: float = 5.0) -> None:
        """Hand the client whatever the server said last: for a few seconds at most, and not past a signal."""
        while len(self.outbox) < RELAY_BUFFER_BYTES:
            data = read_some(self.from_server)
            if not data:  # at its end, or nothing more now: the sandbox has exited
                break
            self.outbox += data
        deadline = time.monotonic() + seconds
        while self.outbox and time.monotonic() < deadline and not stopping():
            _, writable, _ = select.select([], [1], [], 0.1)
            if not writable:
                continue
            try:
                self.outbox = self.outbox[os.write(1, self.outbox):]
            except BlockingIOError:
                continue
            except OSError:
                break


def json_messages(line: bytes) -> Iterator[dict[str, Any]]:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # a line nested past Python's depth is not a message either
        return
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            yield item


def read_some(fd: int) -> bytes | None:
    """What ``fd`` has now: bytes, b"" at its end, None when nothing is ready yet."""
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass


def guard(info_r: int, control_r: int, report_w: int) -> None:
    """The guardian (a forked child of the launcher): report the sandbox's pid 1, then wait for the
    launcher; if it ends without "done", kill the sandbox's pid 1 and bwrap."""
    os.setsid()  # out of the client's process group: a signal to the group does not reach it
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # holds nothing of the client's: its stdout ends when the launcher does
    keep = {0, 1, 2, info_r, control_r, report_w}
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            with contextlib.suppress(OSError):
                os.close(int(name))
    info, control = b"", b""
    child = bwrap = 0
    pidfds: list[int] = []
    reported = False
    open_fds = {info_r, control_r}
    deadline: float | None = None
    selector = selectors.DefaultSelector()
    for fd in open_fds:
        selector.register(fd, selectors.EVENT_READ)
    while open_fds:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        events = selector.select(timeout)
        if not events and deadline is not None:
            break  # the launcher is gone and bwrap said no more
        for key, _ in events:
            fd = int(key.fd)
            data = os.read(fd, 4096)
            if fd == info_r:
                info += data
            else:
                control += data
            if not data:
                selector.unregister(fd)
                open_fds.discard(fd)
                if fd == info_r:
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        child = int(json.loads(info)["child-pid"])
                    pidfds.append(pidfd_of(child))
                    if not reported:
                        with contextlib.suppress(OSError):  # a launcher already gone reads no report
                            os.write(report_w, f"{child}\n".encode())
                        reported = True
                elif b"done\n" in control:
                    return
                else:
                    deadline = time.monotonic()  # the launcher died: bwrap, stopped, names its children
        for line in control.split(b"\n"):
            if line.startswith(b"bwrap ") and not bwrap:
                bwrap = int(line.split()[1])
                pidfds.insert(0, pidfd_of(bwrap))
        if control_r not in open_fds and info_r not in open_fds:
            break
    if b"done\n" in control:
        return
    if bwrap:
        pidfds.extend(stopped_children(bwrap, pidfds[0] if pidfds else -1))
    for pidfd in pidfds:  # a pidfd names the process itself, never a later one with its number
        if pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    for line in control.split(b"\n"):  # then what the launcher would have removed
        kind, _, value = line.decode("utf-8", "replace").partition(" ")
        if kind == "state" and re.fullmatch(r"/tmp/mcpspec-[a-z0-9-]+-[A-Za-z0-9._-]+\.[A-Za-z0-9_]+", value):
            time.sleep(0.2)  # squid and socat die of their own parent-death signal; let them go first
            shutil.rmtree(value, ignore_errors=True)
        elif kind == "shm" and re.fullmatch(r"mcpspec[0-9a-f]{16}-", value):
            remove_shared_memory(value)
        elif kind == "cgroup" and value.startswith(CGROUP_MOUNTS + "/") and CGROUP_PATH.fullmatch(value):
            remove_cgroup(value)  # the sandbox's pid 1 is dead: this kills what is left and removes the leaf


def stopped_children(pid: int, pidfd: int) -> list[int]:
    """Stop bwrap and return pidfds of its children.

    bwrap's child (the sandbox's pid 1 to be) arms its own parent-death signal a moment after it
    exists, and bwrap reports its pid later still: a launcher killed in between left that child
    blocked forever, reported to nobody. bwrap gets no parent-death signal of ours, so it is
    still here: stopped, it forks no more, and its children are read from /proc while its pidfd
    proves the number still names it."""
    if pidfd < 0:
        return []
    with contextlib.suppress(OSError):
        signal.pidfd_send_signal(pidfd, signal.SIGSTOP)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # the stop takes effect when bwrap next leaves the kernel
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                state = handle.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return []
        if state in ("T", "t", "Z", "X"):
            break
        time.sleep(0.002)
    children: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                children += [int(word) for word in handle.read().split()]
    except (OSError, ValueError):
        pass
    fds = [pidfd_of(child) for child in children]
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except OSError:  # bwrap is gone: the numbers read may name other processes by now
        for fd in fds:
            if fd >= 0:
                os.close(fd)
        return []
    return fds


def pidfd_of(pid: int) -> int:
    try:
        return os.pidfd_open(pid) if pid > 0 else -1
    except OSError:
        return -1


def host_networks() -> list[str]:
    """The host's own addresses, read now (the launcher carries own_networks ahead of this runtime):
    squid shares the host's network namespace, so it would reach the host's services on each."""
    try:
        networks: list[str] = globals()["own_networks"]()
    except (OSError, ValueError) as exc:
        raise Refusal(f"the host's own addresses cannot be read, so the egress proxy cannot refuse them: {exc}") from None
    return networks


def remove_shared_memory(prefix: str) -> None:
    """Remove the shared-memory segments a killed squid left in /dev/shm (unlink follows no link)."""
    try:
        directory = os.open("/dev/shm", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for name in os.listdir(directory):
            if name.startswith(prefix):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=directory)
    finally:
        os.close(directory)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def is_socket(directory: int, name: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


def sandbox_cpu_seconds(root: int) -> float:
    """CPU time of ``root`` and every process below it, including children they already reaped."""
    children: dict[int, list[int]] = {}
    times: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        fields = text[text.rindex(b")") + 2:].split()
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        times[pid] = sum(int(value) for value in fields[11:15])
    total = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total / os.sysconf("SC_CLK_TCK")


def main(raw: dict[str, Any], early_signals: list[int]) -> NoReturn:
    os.umask(0o077)
    close_inherited_fds()
    launcher = Launcher(Config.load(raw))
    sys.exit(launcher.run(early_signals))


if __name__ == "__main__":
    main(globals()["CONFIG"], globals().get("EARLY_SIGNALS", []))
