"""The syscall policy, its BPF program and its OCI profile against each other and the kernel.

An interpreter of classic BPF runs the emitted program for every syscall of both tables and for
argument samples around each filtered value (upper halves set, neighbouring bits); a forked
child loads the x86_64 program into the kernel and makes a sample of the same calls, so the
interpreter is checked against the kernel it stands in for. The OCI profile is evaluated with
libseccomp's SCMP_CMP_MASKED_EQ meaning for the same samples.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import random
import signal
import struct
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpspec.targets.seccomp import bpf_program, oci_profile
from mcpspec.targets.seccomp.bpf import JA, JEQ, JGE, JSET, LD_W_ABS, RET, RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS
from mcpspec.targets.seccomp.policy import ALLOWED_GROUPS, ENOSYS_SYSCALLS, REFUSED_GROUPS, SyscallPolicy, policy_for_families
from mcpspec.targets.seccomp.tables import ARCHES, AUDIT_ARCH, SYSCALLS, X32_SYSCALL_BIT

sys.path.insert(0, str(Path(__file__).parent / "probe"))
import syscall_probe

UNIX_ONLY = policy_for_families(("AF_UNIX",))
WITH_INET = policy_for_families(("AF_INET", "AF_INET6", "AF_UNIX"))
POLICIES = (UNIX_ONLY, WITH_INET)
ALLOW, KILL = "allow", "kill"


def run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...] = (0,) * 6) -> str:
    """What the program answers for one call: "allow", "kill" or an errno name."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *args) if nr >= 0 else struct.pack("<IIQ6Q", nr & 0xFFFFFFFF, arch, 0, *args)
    insns = [struct.unpack_from("<HBBI", program, offset) for offset in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]  # an IndexError: a path that falls off the end
        pc += 1
        if code == LD_W_ABS:
            assert k % 4 == 0 and k + 4 <= len(data)
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == JA:
            pc += k
        elif code in (JEQ, JGE, JSET):
            taken = acc == k if code == JEQ else acc >= k if code == JGE else bool(acc & k)
            pc += jt if taken else jf
        elif code == RET:
            if k == RET_ALLOW:
                return ALLOW
            if k == RET_KILL_PROCESS:
                return KILL
            assert k & 0xFFFF0000 == RET_ERRNO
            return errno.errorcode[k & 0xFFFF]
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


def _expected(policy: SyscallPolicy, name: str, args: tuple[int, ...]) -> str:
    return ALLOW if (answer := policy.decide(name, args)) == "allow" else answer


def argument_samples(policy: SyscallPolicy, name: str) -> Iterator[tuple[int, ...]]:
    """Zero arguments, then for each filtered argument: each compared value, with bits around it
    and with the upper half set, and random values."""
    rng = random.Random(name)
    yield (0,) * 6
    for check in (f for f in policy.arg_filters if f.syscall == name):
        values = set(check.values) | {0, 1, 2, 10, 16, 17, 40, 0xFFFFFFFF, 0x5412, 0x541C}
        values |= {v ^ (1 << bit) for v in check.values for bit in range(33)}
        values |= {rng.getrandbits(64) for _ in range(40)}
        for value in sorted(values):
            for upper in (0, 1 << 32, 0xFFFFFFFF << 32):
                args = [0] * 6
                args[check.index] = (value & 0xFFFFFFFF) | upper
                yield tuple(args)


def test_every_syscall_of_both_tables_is_classified_once() -> None:
    names = {name for table in SYSCALLS.values() for name in table}
    allowed = [n for group in ALLOWED_GROUPS.values() for n in group]
    refused = [n for group in REFUSED_GROUPS.values() for n in group]
    everything = allowed + refused + list(ENOSYS_SYSCALLS)
    assert len(everything) == len(set(everything)), "a syscall is in two groups"
    assert set(everything) == names


def test_the_probe_uses_the_tables_numbers() -> None:
    for arch, numbers in syscall_probe.NUMBERS.items():
        assert numbers == {name: SYSCALLS[arch][name] for name in numbers}


@pytest.mark.parametrize("arch", ARCHES)
def test_the_program_answers_as_the_policy_for_every_syscall_and_argument_sample(arch: str) -> None:
    for policy in POLICIES:
        program = bpf_program(policy, arch)
        for name, nr in SYSCALLS[arch].items():
            for args in argument_samples(policy, name):
                assert run_bpf(program, nr, AUDIT_ARCH[arch], args) == _expected(policy, name, args), (arch, name, [hex(a) for a in args])


@pytest.mark.parametrize("arch", ARCHES)
def test_unknown_numbers_get_enosys_and_a_foreign_abi_is_killed(arch: str) -> None:
    program = bpf_program(UNIX_ONLY, arch)
    known = set(SYSCALLS[arch].values())
    holes = [nr for nr in range(max(known) + 200) if nr not in known]
    assert holes
    for nr in [*holes, 0x3FFFFFFF]:
        assert run_bpf(program, nr, AUDIT_ARCH[arch]) == "ENOSYS", nr
    for other in ARCHES:
        if other != arch:
            assert run_bpf(program, SYSCALLS[arch]["read"], AUDIT_ARCH[other]) == KILL
    assert run_bpf(program, 0, 0x40000003) == KILL  # AUDIT_ARCH_I386: x86_64's 32-bit entry point
    if arch == "x86_64":
        for nr in (X32_SYSCALL_BIT, X32_SYSCALL_BIT | SYSCALLS[arch]["read"], -1):
            assert run_bpf(program, nr, AUDIT_ARCH[arch]) == KILL
    else:
        assert run_bpf(program, -1, AUDIT_ARCH[arch]) == "ENOSYS"


def _oci_answer(profile: dict[str, object], name: str, args: tuple[int, ...]) -> str:
    """libseccomp's reading: any matching rule's action (the profile has no conflicting ones), else the default."""
    for rule in profile["syscalls"]:  # type: ignore[attr-defined]
        if name not in rule["names"]:
            continue
        if all((args[a["index"]] & a["value"]) == a["valueTwo"] for a in rule.get("args", [])):
            assert all(a["op"] == "SCMP_CMP_MASKED_EQ" for a in rule.get("args", []))
            return ALLOW if rule["action"] == "SCMP_ACT_ALLOW" else errno.errorcode[rule["errnoRet"]]
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    return errno.errorcode[profile["defaultErrnoRet"]]  # type: ignore[index]


def test_the_oci_profile_answers_as_the_policy() -> None:
    for policy in POLICIES:
        profile = oci_profile(policy)
        for rule in profile["syscalls"]:  # type: ignore[attr-defined]
            indexes = [a["index"] for a in rule.get("args", [])]
            assert len(indexes) == len(set(indexes)), "libseccomp takes one comparison per argument in a rule"
        names = {name for table in SYSCALLS.values() for name in table}
        for name in sorted(names):
            for args in argument_samples(policy, name):
                assert _oci_answer(profile, name, args) == _expected(policy, name, args), (name, [hex(a) for a in args])
        assert [entry["architecture"] for entry in profile["archMap"]] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"]  # type: ignore[index]
        assert all(entry["subArchitectures"] == [] for entry in profile["archMap"])  # type: ignore[attr-defined]
        json.dumps(profile)


# ---------------------------------------------------------------- the kernel's own answer

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _in_filtered_child(program: bytes, calls: list[tuple[int, tuple[int, ...]]]) -> tuple[list[str], int]:
    """Load the program in a forked child, make each call; (answers, the child's exit status)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
        ulong = ctypes.c_ulong
        if libc.prctl(PR_SET_NO_NEW_PRIVS, ulong(1), ulong(0), ulong(0), ulong(0)) or libc.prctl(
            PR_SET_SECCOMP, ulong(SECCOMP_MODE_FILTER), ulong(ctypes.addressof(fprog)), ulong(0), ulong(0)
        ):
            os._exit(99)
        for nr, args in calls:
            result = libc.syscall(ctypes.c_long(nr), *(ctypes.c_ulong(a) for a in args))
            if result >= 0 and nr == SYSCALLS["x86_64"]["socket"]:
                os.close(result)
            answer = ALLOW if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
            os.write(write_end, answer.encode() + b"\n")
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as lines:
        answers = [line.decode().strip() for line in lines]
    return answers, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the sample calls use x86_64's numbers")
def test_the_kernel_answers_a_sample_as_the_interpreter_does() -> None:
    nr = SYSCALLS["x86_64"]
    high = 1 << 32
    # Calls that are harmless when allowed; an allowed one answers "allow" or its own errno (EBADF...).
    calls: list[tuple[int, tuple[int, ...]]] = [
        (nr["getppid"], (0,) * 6),
        (nr["socket"], (1, 1, 0, 0, 0, 0)), (nr["socket"], (2, 1, 0, 0, 0, 0)), (nr["socket"], (40, 1, 0, 0, 0, 0)),
        (nr["socket"], (1 | high, 1, 0, 0, 0, 0)), (nr["socket"], (2 | high, 1, 0, 0, 0, 0)),
        (nr["ioctl"], (2**32 - 1, 0x5412, 0, 0, 0, 0)), (nr["ioctl"], (2**32 - 1, 0x5412 | high, 0, 0, 0, 0)),
        (nr["ioctl"], (2**32 - 1, 0x5413, 0, 0, 0, 0)), (nr["ioctl"], (2**32 - 1, 0x541C | high, 0, 0, 0, 0)),
        (nr["personality"], (0xFFFFFFFF, 0, 0, 0, 0, 0)), (nr["personality"], (0xFFFFFFFF | high, 0, 0, 0, 0, 0)),
        (nr["personality"], (8, 0, 0, 0, 0, 0)),
        (nr["keyctl"], (0, 2**64 - 3, 0, 0, 0, 0)), (nr["io_uring_setup"], (0,) * 6), (nr["clone3"], (0,) * 6),
        (nr["unshare"], (0x10000000, 0, 0, 0, 0, 0)), (460, (0,) * 6), (1000, (0,) * 6),
    ]
    program = bpf_program(UNIX_ONLY, "x86_64")
    answers, status = _in_filtered_child(program, calls)
    assert status == 0
    for (number, args), answer in zip(calls, answers, strict=True):
        interpreted = run_bpf(program, number, AUDIT_ARCH["x86_64"], args)
        assert answer == interpreted or (interpreted == ALLOW and answer in ("EBADF", "EINVAL", "EFAULT")), (number, args, answer, interpreted)
    _, status = _in_filtered_child(program, [(X32_SYSCALL_BIT | nr["getpid"], (0,) * 6)])
    assert status == -signal.SIGSYS


def test_a_launcher_on_another_architecture_refuses_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpspec.targets.bwrap import runtime

    monkeypatch.setattr(runtime.os, "uname", lambda: types.SimpleNamespace(machine="riscv64"))
    with pytest.raises(runtime.Refusal, match="no syscall filter for this machine's architecture riscv64"):
        runtime.syscall_filter({"x86_64": "00", "aarch64": "00"})


FAMILY_SPEC = """\
version: 1
project: fam
servers:
  quiet: {command: [q]}
  listening: {command: [l], process: {listeners: true}}
  fetching: {command: [f], egress: {allow: ["pypi.org:443"]}}
  web: {command: [w], transport: {type: http, port: 8300}}
"""


def test_socket_families_follow_transport_listeners_and_egress() -> None:
    from mcpspec.api import load_text
    from mcpspec.targets.seccomp import syscall_policy

    plan = load_text(FAMILY_SPEC, "fam.yaml")
    families = {name: syscall_policy(server).socket_families for name, server in plan.servers.items()}
    inet = ("AF_INET", "AF_INET6", "AF_UNIX")
    assert families == {"quiet": ("AF_UNIX",), "listening": inet, "fetching": inet, "web": inet}


def test_the_docs_list_exactly_what_the_policy_allows_and_refuses() -> None:
    from mcpspec.targets.seccomp.docs import render

    text = (Path(__file__).parents[1] / "docs" / "seccomp.md").read_text(encoding="utf-8")
    assert text == render(), "docs/seccomp.md is stale: run make docs"
    names = {name for table in SYSCALLS.values() for name in table}
    assert all(f"`{name}`" in text or f"`{name} (" in text for name in names)
