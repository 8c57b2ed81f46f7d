"""The syscall filter every target applies: one policy per server (policy.py) over the
project's own syscall tables (tables.py), compiled to classic BPF for bwrap (bpf.py) and written
as an OCI seccomp profile for podman, compose and Kubernetes (oci.py)."""

from __future__ import annotations

from mcpspec.targets.seccomp.bpf import bpf_program
from mcpspec.targets.seccomp.oci import oci_profile
from mcpspec.targets.seccomp.policy import ArgFilter, SyscallPolicy, syscall_policy

__all__ = ["ArgFilter", "SyscallPolicy", "bpf_program", "oci_profile", "syscall_policy"]
