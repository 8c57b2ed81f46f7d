"""The policy as an OCI seccomp profile (Docker's and podman's JSON form; Kubernetes' Localhost
profiles are the same files).

Refused syscalls fall to ``defaultAction`` (EPERM). Argument filters become allow rules with
SCMP_CMP_MASKED_EQ, which compares ``arg & value`` with ``valueTwo``: a mask of the low 32 bits
compares what the kernel reads of an int argument, and an upper half set by the caller cannot
turn a refused value into an allowed one. "Not one of these values" has no comparison of its
own (libseccomp takes one comparison per argument in a rule), so it is written as the union of
masked patterns that differ from every refused value.
"""

from __future__ import annotations

from itertools import product

from mcpspec.targets.seccomp.policy import ArgFilter, SyscallPolicy
from mcpspec.targets.seccomp.tables import SYSCALLS

LOW_32 = 0xFFFFFFFF
EPERM = 1
ENOSYS = 38
ARCHES = ("SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64")
_MAX_DIFFERING_BITS = 8


def _masked(index: int, mask: int, datum: int) -> dict[str, object]:
    return {"index": index, "value": mask, "valueTwo": datum, "op": "SCMP_CMP_MASKED_EQ"}


def masked_patterns(check: ArgFilter) -> list[tuple[int, int]]:
    """(mask, datum) pairs whose union is exactly the argument values the filter allows."""
    if check.kind == "one_of":
        return [(LOW_32, value) for value in check.values]
    if check.kind == "no_bits":
        return [(check.values[0], 0)]
    values = check.values
    differing = [bit for bit in range(32) if len({(v >> bit) & 1 for v in values}) > 1]
    if len(differing) > _MAX_DIFFERING_BITS:
        raise ValueError(f"{check.syscall}: too many refused values to write as masked comparisons")
    # Differing from every refused value in a bit they share...
    patterns = [(1 << bit, (~values[0]) & (1 << bit)) for bit in range(32) if bit not in differing]
    # ...or sharing those bits and matching none of them on the bits where they differ.
    mask = sum(1 << bit for bit in differing)
    refused = {v & mask for v in values}
    for bits in product((0, 1), repeat=len(differing)):
        datum = sum(1 << bit for bit, on in zip(differing, bits, strict=True) if on)
        if datum not in refused:
            shared = sum(1 << bit for bit in range(32) if bit not in differing)
            patterns.append((mask | shared, datum | (values[0] & shared)))
    return patterns


def oci_profile(policy: SyscallPolicy) -> dict[str, object]:
    known = {name for table in SYSCALLS.values() for name in table}
    filtered = sorted({f.syscall for f in policy.arg_filters})
    rules: list[dict[str, object]] = [
        {"names": [n for n in policy.allowed if n not in filtered and n in known], "action": "SCMP_ACT_ALLOW"},
        {"names": list(policy.enosys), "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS},
    ]
    for name in filtered:
        checks = [f for f in policy.arg_filters if f.syscall == name]
        if name not in policy.allowed:
            continue
        if len(checks) != 1:
            raise ValueError(f"{name}: one argument filter per syscall can be written as OCI rules")
        check = checks[0]
        for mask, datum in masked_patterns(check):
            rules.append({"names": [name], "action": "SCMP_ACT_ALLOW", "args": [_masked(check.index, mask, datum)]})
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": EPERM,
        "archMap": [{"architecture": arch, "subArchitectures": []} for arch in ARCHES],
        "syscalls": rules,
    }
