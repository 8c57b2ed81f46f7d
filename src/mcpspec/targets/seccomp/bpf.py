"""A classic BPF compiler for a SyscallPolicy: the program bwrap loads with ``--seccomp FD``.

Layout: check the architecture (anything else is killed; on x86_64 so is the x32 ABI), load
the syscall number, then a binary search over ranges of numbers that share an answer; each
leaf returns, after checking an argument where the policy filters one. Conditional jumps
reach 255 instructions at most, so a longer jump goes through ``ja`` (32-bit offset).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from mcpspec.targets.seccomp.policy import ArgFilter, SyscallPolicy
from mcpspec.targets.seccomp.tables import AUDIT_ARCH, SYSCALLS, X32_SYSCALL_BIT

# linux/filter.h and linux/seccomp.h.
LD_W_ABS = 0x20
JA = 0x05
JEQ = 0x15
JGE = 0x35
JSET = 0x45
RET = 0x06
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
EPERM = 1
ENOSYS = 38
MAX_INSTRUCTIONS = 4096
# struct seccomp_data: nr, arch, instruction_pointer, args[6]; both arches are little-endian,
# so an argument's low 32 bits come first.
NR_OFFSET = 0
ARCH_OFFSET = 4
ARGS_OFFSET = 16


@dataclass(frozen=True, slots=True)
class Insn:
    code: int
    jt: int
    jf: int
    k: int


def _ret(value: int) -> Insn:
    return Insn(RET, 0, 0, value)


def _errno(name: str) -> int:
    return RET_ERRNO | (ENOSYS if name == "ENOSYS" else EPERM)


def _leaf(answer: str, filters: Sequence[ArgFilter]) -> list[Insn]:
    """The instructions that answer one range of numbers; they always end in a return."""
    if answer != "allow":
        return [_ret(_errno(answer))]
    out: list[Insn] = []
    for check in filters:
        out.append(Insn(LD_W_ABS, 0, 0, ARGS_OFFSET + 8 * check.index))
        count = len(check.values)
        if check.kind == "one_of":  # a match jumps past the other compares and the refusal
            out += [Insn(JEQ, count - i, 0, value) for i, value in enumerate(check.values)]
            out.append(_ret(RET_ERRNO | EPERM))
        elif check.kind == "none_of":  # a match lands on the refusal; no match jumps over it
            out += [Insn(JEQ, count - i, 0, value) for i, value in enumerate(check.values)]
            out += [Insn(JA, 0, 0, 1), _ret(RET_ERRNO | EPERM)]
        else:
            out += [Insn(JSET, 0, 1, check.values[0]), _ret(RET_ERRNO | EPERM)]
    out.append(_ret(RET_ALLOW))
    return out


@dataclass(frozen=True, slots=True)
class _Range:
    start: int  # first number; the range ends where the next one starts
    answer: str  # "allow", "EPERM" or "ENOSYS"
    syscall: str | None  # the name, where arguments are checked


def _ranges(policy: SyscallPolicy, arch: str) -> list[_Range]:
    filtered = {f.syscall for f in policy.arg_filters}
    by_number = {number: name for name, number in SYSCALLS[arch].items()}
    ranges: list[_Range] = []
    for number in range(max(by_number) + 2):
        name = by_number.get(number)
        answer = policy.answer(name) if name is not None else "ENOSYS"
        syscall = name if name in filtered and answer == "allow" else None
        if ranges and syscall is None and ranges[-1].syscall is None and ranges[-1].answer == answer:
            continue
        ranges.append(_Range(number, answer, syscall))
    return ranges


def _tree(ranges: Sequence[_Range], policy: SyscallPolicy) -> list[Insn]:
    if len(ranges) == 1:
        only = ranges[0]
        return _leaf(only.answer, [f for f in policy.arg_filters if f.syscall == only.syscall] if only.syscall else [])
    middle = len(ranges) // 2
    left, right = _tree(ranges[:middle], policy), _tree(ranges[middle:], policy)
    split = ranges[middle].start
    if len(left) <= 255:
        return [Insn(JGE, len(left), 0, split), *left, *right]
    return [Insn(JGE, 0, 1, split), Insn(JA, 0, 0, len(left)), *left, *right]


def instructions(policy: SyscallPolicy, arch: str) -> list[Insn]:
    if arch not in AUDIT_ARCH:
        raise ValueError(f"no syscall table for {arch!r}")
    out = [Insn(LD_W_ABS, 0, 0, ARCH_OFFSET), Insn(JEQ, 1, 0, AUDIT_ARCH[arch]), _ret(RET_KILL_PROCESS), Insn(LD_W_ABS, 0, 0, NR_OFFSET)]
    if arch == "x86_64":
        out += [Insn(JSET, 0, 1, X32_SYSCALL_BIT), _ret(RET_KILL_PROCESS)]
    out += _tree(_ranges(policy, arch), policy)
    if len(out) > MAX_INSTRUCTIONS:
        raise ValueError(f"the filter needs {len(out)} instructions, over the kernel's {MAX_INSTRUCTIONS}")
    return out


@functools.cache  # servers share a handful of policies: a build of 1,000 servers compiles each once
def bpf_program(policy: SyscallPolicy, arch: str) -> bytes:
    """The filter as the kernel reads it: struct sock_filter[] in the machine's byte order
    (little-endian on both arches)."""
    return b"".join(struct.pack("<HBBI", i.code, i.jt, i.jf, i.k) for i in instructions(policy, arch))
