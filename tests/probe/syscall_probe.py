"""Tries the syscalls a sandbox's filter must refuse, and a few it must allow, and prints one
JSON object: {probe: "ok" | errno name}.

Standard library only, so it runs on the host's /usr/bin/python3 inside any target (bwrap,
systemd, podman, Kubernetes). Each probe makes the raw syscall with the machine's number
(tests check these numbers against the project's tables), so libc fallbacks do not hide a
refusal. Probes act on the probe's own processes only: the ptrace and process_vm_readv targets
are a child it forks, keys go to a keyring that dies with it.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable

NUMBERS = {
    "x86_64": {
        "ioctl": 16, "socket": 41, "socketpair": 53, "clone": 56, "ptrace": 101, "personality": 135,
        "mount": 165, "umount2": 166, "init_module": 175, "add_key": 248, "request_key": 249, "keyctl": 250,
        "unshare": 272, "kexec_load": 246, "perf_event_open": 298, "setns": 308,
        "process_vm_readv": 310, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "clone3": 435,
    },
    "aarch64": {
        "ioctl": 29, "socket": 198, "socketpair": 199, "clone": 220, "ptrace": 117, "personality": 92,
        "mount": 40, "umount2": 39, "init_module": 105, "add_key": 217, "request_key": 218, "keyctl": 219,
        "unshare": 97, "kexec_load": 104, "perf_event_open": 241, "setns": 268,
        "process_vm_readv": 270, "bpf": 280, "userfaultfd": 282, "io_uring_setup": 425, "clone3": 435,
    },
}
AF = {"unix": 1, "inet": 2, "inet6": 10, "netlink": 16, "packet": 17, "vsock": 40}
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_CLOEXEC = 1, 2, 3, 0o2000000
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x20000, 0x10000000, 0x40000000
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING = -2, -3
KEYCTL_GET_KEYRING_ID, KEYCTL_SEARCH, KEYCTL_READ = 0, 10, 11
# The key a keyring test puts in the launching process's session keyring.
TEST_KEY = b"mcpspec-probe-secret"
PTRACE_TRACEME, PTRACE_ATTACH = 0, 16
TIOCSTI = 0x5412
ADDR_NO_RANDOMIZE = 0x0040000

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = NUMBERS.get(os.uname().machine, {})


def raw(name: str, *args: object) -> int:
    """The syscall's return value, or minus its errno."""
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result: int = libc.syscall(ctypes.c_long(NR[name]), *converted)
    return -ctypes.get_errno() if result == -1 else result


def answer(result: int) -> str:
    if result >= 0:
        return "ok"
    return errno.errorcode.get(-result, str(-result))


def closing(result: int) -> str:
    if result >= 0:
        os.close(result)
    return answer(result)


def in_child(action: Callable[[], int]) -> str:
    """Run an action in a forked child (it may change the child for good); its answer comes back
    as the exit status: 0 for ok, else the errno."""
    pid = os.fork()
    if pid == 0:
        result = action()
        os._exit(0 if result >= 0 else min(-result, 255))
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if status < 0:
        return f"killed by {signal.Signals(-status).name}"
    return "ok" if status == 0 else errno.errorcode.get(status, str(status))


def with_sleeper(action: Callable[[int], int]) -> str:
    """An action on another process: a child of the probe's that sleeps until killed."""
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    try:
        return answer(action(pid))
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def raw_clone(flags: int) -> int:
    """clone() with fork semantics; the child leaves at once."""
    pid = raw("clone", flags | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
    return pid


def clone3(flags: int) -> int:
    args = (ctypes.c_uint64 * 11)(flags, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, 0, 0, 0)  # struct clone_args
    pid: int = libc.syscall(ctypes.c_long(NR["clone3"]), ctypes.byref(args), ctypes.c_long(ctypes.sizeof(args)))
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        return pid
    return -ctypes.get_errno()


def io_uring() -> int:
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    return raw("io_uring_setup", 1, params)


def keyring_read() -> str:
    key = raw("keyctl", KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
    if key < 0:
        return answer(key)
    buffer = ctypes.create_string_buffer(4096)
    return answer(raw("keyctl", KEYCTL_READ, key, buffer, len(buffer)))


def session_key_read() -> str:
    """Find the test's key in the session keyring by name and read it: "ok" means the key leaked."""
    key = raw("keyctl", KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, b"user", TEST_KEY, 0)
    if key < 0:
        return answer(key)
    buffer = ctypes.create_string_buffer(4096)
    return answer(raw("keyctl", KEYCTL_READ, key, buffer, len(buffer)))


def perf_event() -> int:
    attr = (ctypes.c_uint32 * 32)()  # struct perf_event_attr, 128 bytes
    attr[0], attr[1] = 1, 128  # PERF_TYPE_SOFTWARE, size; config 0: PERF_COUNT_SW_CPU_CLOCK
    attr[10] = (1 << 5) | (1 << 6)  # exclude_kernel, exclude_hv (the flags word at byte 40)
    return raw("perf_event_open", ctypes.addressof(attr), 0, -1, -1, 0)


def bpf_map() -> int:
    attr = (ctypes.c_uint32 * 30)(2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, one entry
    return raw("bpf", 0, ctypes.addressof(attr), ctypes.sizeof(attr))


def vm_read(pid: int) -> int:
    buffer = ctypes.create_string_buffer(8)
    local = (ctypes.c_void_p * 2)(ctypes.addressof(buffer), 8)
    remote = (ctypes.c_void_p * 2)(ctypes.addressof(buffer), 8)
    return raw("process_vm_readv", pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)


def setns_net() -> int:
    fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        return raw("setns", fd, CLONE_NEWNET)
    finally:
        os.close(fd)


def mount_tmpfs() -> str:
    """A tmpfs mounted on a directory of the probe's own, unmounted again if the mount worked
    (run unfiltered as root, the probe must leave the host's mounts as they were)."""
    target = tempfile.mkdtemp(prefix="mcpspec-syscall-probe-")
    try:
        result = raw("mount", b"none", target.encode(), b"tmpfs", 0, None)
        if result >= 0:
            raw("umount2", target.encode(), 2)  # MNT_DETACH
        return answer(result)
    finally:
        os.rmdir(target)


def socket(family: str, kind: int = SOCK_STREAM, protocol: int = 0) -> str:
    return closing(raw("socket", AF[family], kind | SOCK_CLOEXEC, protocol))


def socketpair(family: str) -> str:
    fds = (ctypes.c_int * 2)()
    result = raw("socketpair", AF[family], SOCK_STREAM | SOCK_CLOEXEC, 0, ctypes.addressof(fds))
    if result >= 0:
        os.close(fds[0])
        os.close(fds[1])
    return answer(result)


def tiocsti(request: int) -> int:
    char = ctypes.create_string_buffer(b"x")
    return raw("ioctl", 0, request, char)


PROBES: dict[str, Callable[[], str]] = {
    "io_uring_setup": lambda: closing(io_uring()),
    "keyctl_session_keyring_id": lambda: answer(raw("keyctl", KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)),
    "keyctl_read_session_keyring": keyring_read,
    "keyctl_read_launcher_key": session_key_read,
    "add_key": lambda: answer(raw("add_key", b"user", b"mcpspec-probe", b"x", 1, KEY_SPEC_PROCESS_KEYRING)),
    "request_key": lambda: answer(raw("request_key", b"user", b"mcpspec-probe-absent", None, 0)),
    "userfaultfd": lambda: closing(raw("userfaultfd", os.O_CLOEXEC | 1)),  # UFFD_USER_MODE_ONLY
    "perf_event_open": lambda: closing(perf_event()),
    "bpf": lambda: closing(bpf_map()),
    "ptrace_attach_child": lambda: with_sleeper(lambda pid: raw("ptrace", PTRACE_ATTACH, pid, 0, 0)),
    "ptrace_traceme": lambda: in_child(lambda: raw("ptrace", PTRACE_TRACEME, 0, 0, 0)),
    "process_vm_readv_child": lambda: with_sleeper(vm_read),
    "unshare_user": lambda: in_child(lambda: raw("unshare", CLONE_NEWUSER)),
    "unshare_mount": lambda: in_child(lambda: raw("unshare", CLONE_NEWNS)),
    "unshare_net": lambda: in_child(lambda: raw("unshare", CLONE_NEWNET)),
    "clone_newuser": lambda: answer(raw_clone(CLONE_NEWUSER)),
    "clone3_newuser": lambda: answer(clone3(CLONE_NEWUSER)),
    "setns": lambda: in_child(setns_net),
    "mount_tmpfs": mount_tmpfs,
    "kexec_load": lambda: answer(raw("kexec_load", 0, 0, 0, 0)),
    "init_module": lambda: answer(raw("init_module", b"\0" * 64, 64, b"")),
    "ioctl_tiocsti": lambda: answer(tiocsti(TIOCSTI)),
    "ioctl_tiocsti_upper_bits": lambda: answer(tiocsti(TIOCSTI | 1 << 32)),
    "personality_no_randomize": lambda: in_child(lambda: raw("personality", ADDR_NO_RANDOMIZE)),
    "socket_vsock": lambda: socket("vsock"),
    "socket_netlink": lambda: socket("netlink", SOCK_RAW),
    "socket_packet": lambda: socket("packet", SOCK_DGRAM),
    "socket_inet_upper_bits": lambda: closing(raw("socket", AF["inet"] | 1 << 32, SOCK_STREAM | SOCK_CLOEXEC, 0)),
    # Controls: what every server needs, and what its families allow.
    "clone_plain": lambda: answer(raw_clone(0)),
    "personality_query": lambda: answer(raw("personality", 0xFFFFFFFF)),
    "socketpair_unix": lambda: socketpair("unix"),
    "socket_unix": lambda: socket("unix"),
    "socket_inet": lambda: socket("inet"),
    "socket_inet6": lambda: socket("inet6"),
}


def main() -> int:
    if not NR:
        print(json.dumps({"error": f"no syscall numbers for {os.uname().machine}"}))
        return 2
    print(json.dumps({name: probe() for name, probe in PROBES.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
