"""docs/seccomp.md, rendered from the policy's own tables (``make docs``; a test keeps it current)."""

from __future__ import annotations

import sys

from mcpspec.targets.seccomp.policy import (
    ALLOWED_GROUPS,
    CLONE_NEW_FLAGS,
    ENOSYS_SYSCALLS,
    REFUSED_GROUPS,
    TIOCLINUX,
    TIOCSTI,
    policy_for_families,
)
from mcpspec.targets.seccomp.tables import ARCHES, SYSCALLS

INTRO = """\
# Syscall filter

Every server gets one syscall policy (`mcpspec.targets.seccomp`): an allow-list over the project's
own syscall tables of x86_64 and aarch64 (the kernel's numbers as of Linux 6.1). It starts from
Docker's default profile and is stricter: no io_uring, no kernel keyrings, no ptrace or other
access to another process's memory, no new namespaces and no mounts, no BPF, perf, userfaultfd,
fanotify or kernel modules, and socket families limited to what the server's egress needs.

How each target applies it, and how far, is its capability matrix's `syscall filter` row
(`targets/<target>/README.md`). The bubblewrap launcher loads it with `bwrap --seccomp` as classic
BPF built by mcpspec at build time (the launcher only picks its machine's architecture, and refuses
any other); the container targets write it as an OCI seccomp profile (the JSON form Docker, podman
and Kubernetes' `Localhost` profiles read). The same probe, `tests/probe/syscall_probe.py`, is run
inside every target's sandbox by its tests.

## Answers

- A refused syscall fails with `EPERM`.
- `clone3` fails with `ENOSYS`: it passes its flags in memory, which a filter cannot read, and on
  `ENOSYS` libc falls back to `clone`, whose flags the filter checks.
- A number the tables do not hold (a syscall newer than the tables) fails with `ENOSYS` under the
  BPF program, as on an older kernel, so programs fall back. An OCI profile names syscalls, and the
  runtime answers one it does not name with the default action (`EPERM`; some runtimes, runc among
  them, answer `ENOSYS` for syscalls newer than every one the profile names).
- A call through another ABI is killed: x86_64's 32-bit entry point (`int 0x80`) and its x32 ABI
  (numbers with bit 30 set) under the BPF program; an OCI profile lists only the two 64-bit
  architectures, without their 32-bit sub-architectures.

## Argument checks

Each check reads the low 32 bits of the argument, which is all the kernel reads of these `int`
and flag arguments: a caller that sets the upper half cannot turn a refused value into another.

| syscall | allowed when | why |
|---|---|---|
"""

LIMITS = """
## Socket families

`AF_UNIX` always (local IPC, and the bwrap egress bridge's socket). `AF_INET` and `AF_INET6` only
when the server listens on HTTP, may open listeners (`process.listeners: true`) or has any egress
(an allowlist reaches the proxy on 127.0.0.1; open egress uses the network directly). A stdio
server whose egress is denied gets `AF_UNIX` alone. Every other family (`AF_NETLINK`, `AF_PACKET`,
`AF_VSOCK`, `AF_ALG`, Bluetooth...) is refused. A Kubernetes server container always gets `AF_INET`
and `AF_INET6`: the stdio-to-HTTP bridge (or the HTTP server) listens in the same container.

## Kernel keyrings

Besides refusing `keyctl`, `add_key` and `request_key`, the bubblewrap launcher leaves the session
keyring it was started with (a login session's, set up by pam_keyinit) for a fresh anonymous one
before it starts anything, so no process of the sandbox possesses a key of the login session even
where a filter is not in force.

## What a server notices

- `ptrace` is refused outright: debuggers, `strace` and crash reporters that attach do not work.
- `AF_NETLINK` is refused: `getifaddrs()` (Node's `os.networkInterfaces()`, `ip addr`) fails;
  glibc's `getaddrinfo` does without it.
- io_uring is refused: runtimes that try it fall back to epoll and thread pools (Node's libuv
  does); a program that needs it does not start.
- `personality` only reads the current persona or sets the default one: `setarch -R` fails.
- Syscalls newer than the tables fail (`ENOSYS` or `EPERM`, see above) until the tables are updated.
"""


def _arch_note(name: str) -> str:
    arches = [arch for arch in ARCHES if name in SYSCALLS[arch]]
    return f"{name} ({arches[0]} only)" if len(arches) == 1 else name


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{_arch_note(name)}`" for name in sorted(names))


def _checks() -> list[str]:
    rows = {
        "clone": (f"the flags hold none of `CLONE_NEW*` (mask `{CLONE_NEW_FLAGS:#x}`)", "no new namespace: no user namespace to gain capabilities in"),
        "ioctl": (f"the request is neither `TIOCSTI` (`{TIOCSTI:#x}`) nor `TIOCLINUX` (`{TIOCLINUX:#x}`)", "no typing into the user's terminal"),
        "personality": ("the persona is `0` (Linux) or `0xffffffff` (a query)", "no switch of execution domain or of address-space randomization"),
        "socket": ("the family is one of the server's (see Socket families)", "no kernel interface the server's network use does not need"),
        "socketpair": ("the family is `AF_UNIX`", "the only family a socket pair is made of"),
    }
    checked = {f.syscall for f in policy_for_families(("AF_UNIX",)).arg_filters}
    assert checked == set(rows), "a new argument check needs its row in docs"
    return [f"| `{name}` | {rows[name][0]} | {rows[name][1]} |" for name in sorted(rows)]


def render() -> str:
    lines = [INTRO.rstrip("\n"), *_checks(), LIMITS.rstrip("\n"), "", "## Allowed", ""]
    for title, names in ALLOWED_GROUPS.items():
        lines += [f"- {title}: {_names(names)}", ""]
    lines += ["## Refused", ""]
    for reason, names in REFUSED_GROUPS.items():
        lines += [f"- {reason}: {_names(names)}", ""]
    lines += [f"- `ENOSYS` instead of `EPERM`: {_names(ENOSYS_SYSCALLS)}", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
