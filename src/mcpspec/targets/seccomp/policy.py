"""The syscall policy every target applies: an allow-list over the project's syscall tables.

Every name in either table (tables.py) is classified here, allowed or refused with the reason;
a test holds the two in step, so a new table entry cannot slip in unclassified. The base is
Docker's default profile, made stricter: no io_uring, no kernel keyrings, no ptrace or other
access to another process's memory, no new namespaces and no mounts, no BPF, perf, userfaultfd,
fanotify or kernel modules, socket families limited to what the server's egress needs.

A refused syscall fails with EPERM. ``clone3`` fails with ENOSYS, so libc falls back to ``clone``,
whose flags can be checked (clone3 passes them in memory a filter cannot read); numbers the
tables do not know also get ENOSYS, as on an older kernel. A foreign architecture (x86_64's
32-bit or x32 entry points) is killed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.egress import egress_plan

# Allowed, by what a program uses them for (the docs list them under these headings).
ALLOWED_GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "files and directories": (
        "access", "chdir", "chmod", "chown", "close", "close_range", "copy_file_range", "creat", "dup", "dup2",
        "dup3", "faccessat", "faccessat2", "fadvise64", "fallocate", "fchdir", "fchmod", "fchmodat", "fchown",
        "fchownat", "fcntl", "fdatasync", "fgetxattr", "flistxattr", "flock", "fremovexattr", "fsetxattr",
        "fstat", "fstatfs", "fsync", "ftruncate", "futimesat", "getcwd", "getdents", "getdents64", "getxattr",
        "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "lchown", "lgetxattr", "link",
        "linkat", "listxattr", "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "mkdir", "mkdirat",
        "mknod", "mknodat", "newfstatat", "open", "openat", "openat2", "pread64", "preadv", "preadv2",
        "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
        "removexattr", "rename", "renameat", "renameat2", "rmdir", "sendfile", "setxattr", "splice", "stat",
        "statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "tee", "truncate",
        "umask", "unlink", "unlinkat", "utime", "utimensat", "utimes", "vmsplice", "write", "writev",
    ),
    "legacy asynchronous I/O (file reads and writes only; io_uring is refused)": (
        "io_cancel", "io_destroy", "io_getevents", "io_pgetevents", "io_setup", "io_submit",
    ),
    "memory": (
        "brk", "get_mempolicy", "madvise", "membarrier", "memfd_create", "mincore", "mlock", "mlock2",
        "mlockall", "mmap", "mprotect", "mremap", "msync", "munlock", "munlockall", "munmap", "pkey_alloc",
        "pkey_free", "pkey_mprotect", "remap_file_pages",
    ),
    "processes and threads (clone without namespace flags)": (
        "arch_prctl", "capget", "capset", "clone", "execve", "execveat", "exit", "exit_group", "fork",
        "get_robust_list", "get_thread_area", "getcpu", "getegid", "geteuid", "getgid", "getgroups",
        "getpgid", "getpgrp", "getpid", "getppid", "getpriority", "getresgid", "getresuid", "getrlimit",
        "getrusage", "getsid", "gettid", "getuid", "ioprio_get", "ioprio_set", "personality", "prctl",
        "prlimit64", "rseq", "sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
        "sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval", "sched_setaffinity",
        "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "set_robust_list",
        "set_thread_area", "set_tid_address", "setfsgid", "setfsuid", "setgid", "setgroups", "setpgid",
        "setpriority", "setregid", "setresgid", "setresuid", "setreuid", "setrlimit", "setsid", "setuid",
        "times", "uname", "vfork", "wait4", "waitid", "sysinfo",
    ),
    "signals": (
        "kill", "pidfd_open", "pidfd_send_signal", "pause", "rt_sigaction", "rt_sigpending", "rt_sigprocmask",
        "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo",
        "restart_syscall", "sigaltstack", "signalfd", "signalfd4", "tgkill", "tkill",
    ),
    "time and timers (reading; setting the clock is refused)": (
        "alarm", "clock_getres", "clock_gettime", "clock_nanosleep", "getitimer", "gettimeofday", "nanosleep",
        "setitimer", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
        "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime",
    ),
    "waiting and events": (
        "epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd",
        "eventfd2", "futex", "futex_waitv", "pipe", "pipe2", "poll", "ppoll", "pselect6", "select",
    ),
    "sockets (socket and socketpair only in the server's families)": (
        "accept", "accept4", "bind", "connect", "getpeername", "getsockname", "getsockopt", "listen",
        "recvfrom", "recvmmsg", "recvmsg", "sendmmsg", "sendmsg", "sendto", "setsockopt", "shutdown",
        "socket", "socketpair",
    ),
    "System V and POSIX IPC (in the sandbox's own IPC namespace)": (
        "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink", "msgctl",
        "msgget", "msgrcv", "msgsnd", "semctl", "semget", "semop", "semtimedop", "shmat", "shmctl", "shmdt",
        "shmget",
    ),
    "terminal and device control (ioctl without TIOCSTI and TIOCLINUX)": ("ioctl",),
    "restricting oneself further": (
        "getrandom", "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "seccomp",
    ),
})

# Refused, with the reason the docs give.
REFUSED_GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "io_uring: its operations (IORING_OP_SOCKET, OPENAT, CONNECT...) bypass every per-syscall filter": (
        "io_uring_enter", "io_uring_register", "io_uring_setup",
    ),
    "kernel keyrings: a key of the login session or of root must not be readable or creatable": (
        "add_key", "keyctl", "request_key",
    ),
    "another process's memory or descriptors (ptrace and its relatives)": (
        "kcmp", "pidfd_getfd", "process_madvise", "process_mrelease", "process_vm_readv", "process_vm_writev",
        "ptrace",
    ),
    "new namespaces (clone with CLONE_NEW* flags is refused by its argument filter too)": ("setns", "unshare"),
    "mounts and root changes": (
        "chroot", "fsconfig", "fsmount", "fsopen", "fspick", "mount", "mount_setattr", "move_mount", "open_tree",
        "pivot_root", "umount2",
    ),
    "kernel attack surface a server does not need (BPF, perf, userfaultfd, fanotify)": (
        "bpf", "fanotify_init", "fanotify_mark", "perf_event_open", "userfaultfd",
    ),
    "kernel modules and kexec": (
        "create_module", "delete_module", "finit_module", "get_kernel_syms", "init_module", "kexec_file_load",
        "kexec_load", "query_module",
    ),
    "file handles (open_by_handle_at reads any file of a mount)": ("name_to_handle_at", "open_by_handle_at"),
    "host administration (clock, swap, reboot, accounting, quotas, names, kernel log)": (
        "acct", "adjtimex", "clock_adjtime", "clock_settime", "quotactl", "quotactl_fd", "reboot",
        "setdomainname", "sethostname", "settimeofday", "swapoff", "swapon", "syslog", "vhangup",
    ),
    "NUMA placement of memory (needs CAP_SYS_NICE in Docker's profile)": (
        "mbind", "migrate_pages", "move_pages", "set_mempolicy", "set_mempolicy_home_node",
    ),
    "x86 port I/O and segment tables": ("ioperm", "iopl", "modify_ldt"),
    "secret memory (memfd_secret: unswappable memory outside the accounting a target sets up)": ("memfd_secret",),
    "obsolete or unimplemented": (
        "_sysctl", "afs_syscall", "epoll_ctl_old", "epoll_wait_old", "getpmsg", "lookup_dcookie", "nfsservctl",
        "putpmsg", "security", "sysfs", "tuxcall", "uselib", "ustat", "vserver",
    ),
})

# clone3 passes its flags in memory a seccomp filter cannot read: ENOSYS makes libc fall back
# to clone, whose flags are checked.
ENOSYS_SYSCALLS = ("clone3",)

# Values the filter compares (the same on x86_64 and aarch64).
ADDRESS_FAMILIES: Mapping[str, int] = MappingProxyType({
    "AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17, "AF_VSOCK": 40,
})
# CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
TIOCSTI = 0x5412  # push a character into the terminal's input: types commands into the user's shell
TIOCLINUX = 0x541C  # the Linux console's selection and keyboard controls
PER_LINUX = 0x0000
PERSONALITY_QUERY = 0xFFFFFFFF

Answer = Literal["allow", "EPERM", "ENOSYS"]


@dataclass(frozen=True, slots=True)
class ArgFilter:
    """A check on one argument of an allowed syscall, on its low 32 bits (every argument the
    filters check is a 32-bit int or flags word in the kernel, which ignores the upper half).

    ``one_of``: allowed only when the argument is one of ``values``; ``none_of``: refused when it
    is one of them; ``no_bits``: refused when it has any bit of ``values[0]``.
    """

    syscall: str
    index: int
    kind: Literal["one_of", "none_of", "no_bits"]
    values: tuple[int, ...]

    def allows(self, arg: int) -> bool:
        low = arg & 0xFFFFFFFF
        if self.kind == "one_of":
            return low in self.values
        if self.kind == "none_of":
            return low not in self.values
        return low & self.values[0] == 0


@dataclass(frozen=True, slots=True)
class SyscallPolicy:
    """One server's syscall policy; everything not in ``allowed`` is refused (EPERM), except
    ``enosys`` (ENOSYS). ``arg_filters`` narrow allowed syscalls by an argument."""

    allowed: tuple[str, ...]
    socket_families: tuple[str, ...]
    arg_filters: tuple[ArgFilter, ...]
    enosys: tuple[str, ...] = ENOSYS_SYSCALLS

    def answer(self, name: str) -> Answer:
        """The answer for a syscall by name, before any argument filter."""
        if name in self.enosys:
            return "ENOSYS"
        return "allow" if name in self.allowed else "EPERM"

    def decide(self, name: str, args: tuple[int, ...] = (0,) * 6) -> Answer:
        """The reference answer for one call, which the compiled forms are tested against."""
        answer = self.answer(name)
        if answer == "allow" and not all(f.allows(args[f.index]) for f in self.arg_filters if f.syscall == name):
            return "EPERM"
        return answer


def socket_families(sandbox: EffectiveSandbox) -> tuple[str, ...]:
    """AF_UNIX always (local IPC, the egress bridge's socket); AF_INET and AF_INET6 when the
    server listens on HTTP, may open listeners (process.listeners) or has any egress (the proxy
    is reached on 127.0.0.1)."""
    families = ["AF_UNIX"]
    if isinstance(sandbox.transport, HttpTransport) or sandbox.process.listeners or egress_plan(sandbox).mode != "none":
        families += ["AF_INET", "AF_INET6"]
    return tuple(sorted(families))


def policy_for_families(families: tuple[str, ...]) -> SyscallPolicy:
    allowed = tuple(sorted(name for names in ALLOWED_GROUPS.values() for name in names))
    numbers = tuple(ADDRESS_FAMILIES[f] for f in families)
    filters = (
        ArgFilter("clone", 0, "no_bits", (CLONE_NEW_FLAGS,)),
        ArgFilter("ioctl", 1, "none_of", (TIOCSTI, TIOCLINUX)),
        ArgFilter("personality", 0, "one_of", (PER_LINUX, PERSONALITY_QUERY)),
        ArgFilter("socket", 0, "one_of", numbers),
        ArgFilter("socketpair", 0, "one_of", (ADDRESS_FAMILIES["AF_UNIX"],)),
    )
    return SyscallPolicy(allowed=allowed, socket_families=tuple(sorted(families)), arg_filters=filters)


def syscall_policy(server: EffectiveSandbox) -> SyscallPolicy:
    """The policy of one server: the shared allow-list, its socket families."""
    return policy_for_families(socket_families(server))
