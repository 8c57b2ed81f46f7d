"""What tests/probe/syscall_probe.py must print inside a sandbox whose syscall filter holds:
shared by the tests of every target ("the same syscall probe on each target")."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

SYSCALL_PROBE = Path(__file__).with_name("syscall_probe.py")

REFUSED = (
    "add_key", "bpf", "clone_newuser", "init_module", "io_uring_setup", "ioctl_tiocsti", "ioctl_tiocsti_upper_bits",
    "kexec_load", "keyctl_read_launcher_key", "keyctl_read_session_keyring", "keyctl_session_keyring_id", "mount_tmpfs", "perf_event_open",
    "personality_no_randomize", "process_vm_readv_child", "ptrace_attach_child", "ptrace_traceme", "request_key", "setns",
    "socket_netlink", "socket_packet", "socket_vsock", "unshare_mount", "unshare_net", "unshare_user", "userfaultfd",
)
ALWAYS_ALLOWED = ("clone_plain", "personality_query", "socket_unix", "socketpair_unix")
INET = ("socket_inet", "socket_inet6", "socket_inet_upper_bits")


def expected(families: Collection[str]) -> dict[str, str]:
    """The answer of every probe under the policy with these socket families."""
    answers = {name: "EPERM" for name in REFUSED}
    answers["clone3_newuser"] = "ENOSYS"  # so libc falls back to clone, whose flags the filter reads
    answers.update({name: "ok" for name in ALWAYS_ALLOWED})
    answers.update({name: "ok" if "AF_INET" in families else "EPERM" for name in INET})
    return answers


def mismatches(output: str, families: Collection[str]) -> dict[str, tuple[str, str]]:
    """{probe: (expected, found)} for every probe that did not answer as the policy says."""
    found = json.loads(output.strip().splitlines()[-1])
    want = expected(families)
    return {name: (answer, found.get(name, "missing")) for name, answer in want.items() if found.get(name) != answer} | {
        name: ("no such probe", value) for name, value in found.items() if name not in want
    }
