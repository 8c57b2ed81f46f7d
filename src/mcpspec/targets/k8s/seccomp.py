"""The syscall filter of a server's container: the project's policy as a Localhost seccomp profile
(``--seccomp-localhost DIR``: the build writes ``seccomp/<server>.json`` for the operator to put
in ``<kubelet seccomp root>/DIR/`` on every node), or the runtime's default without it."""

from __future__ import annotations

import functools
import json
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.seccomp import SyscallPolicy, oci_profile, syscall_policy
from mcpspec.targets.seccomp.policy import policy_for_families

PROFILE_DIR = "seccomp"
RUNTIME_DEFAULT = (
    "without --seccomp-localhost: seccompProfile RuntimeDefault, the node runtime's default profile, which allows what the project's "
    "policy refuses: keyctl, add_key and request_key, AF_VSOCK, AF_NETLINK and AF_PACKET sockets, ptrace and process_vm_readv of the "
    "pod's own processes, user namespaces where the runtime permits them (podman 4.3's default, probed here), and io_uring on containerd "
    "before 2.0 and Docker before 25; with --seccomp-localhost DIR each server container gets the project's policy as a Localhost "
    "profile (seccomp/<server>.json, which the operator installs under the kubelet's seccomp root at DIR on every node)"
)
LOCALHOST = (
    "seccompProfile Localhost {dir}/<server>.json: the project's policy (docs/seccomp.md) with AF_INET and AF_INET6 for the pod's "
    "listener (the stdio-to-HTTP bridge runs in the server's container), written to seccomp/<server>.json for the operator to "
    "install on every node (a container whose profile is missing does not start); the egress proxy keeps RuntimeDefault; "
    "the profile and the generated pod are run by podman kube play with the syscall probe, which reads the profile from "
    "podman's annotation (mirrored from the field by the test): no kubelet applies the field here"
)
# Every server container listens on TCP: an HTTP server on its port, a stdio one through the
# stdio-to-HTTP bridge, which runs in the same container under the same filter.
LISTENING = ("AF_INET", "AF_INET6")


def container_policy(sandbox: EffectiveSandbox) -> SyscallPolicy:
    families = set(syscall_policy(sandbox).socket_families) | set(LISTENING)
    return policy_for_families(tuple(sorted(families)))


def profile_path(sandbox: EffectiveSandbox) -> str:
    """The profile's file in the build's output."""
    return f"{PROFILE_DIR}/{sandbox.name}.json"


def seccomp_profile(sandbox: EffectiveSandbox, options: BuildOptions) -> dict[str, str]:
    """The container's ``securityContext.seccompProfile``."""
    if options.seccomp_localhost is None:
        return {"type": "RuntimeDefault"}
    return {"type": "Localhost", "localhostProfile": f"{options.seccomp_localhost}/{sandbox.name}.json"}


def profile_file(sandbox: EffectiveSandbox) -> str:
    return _profile_text(container_policy(sandbox))


@functools.cache
def _profile_text(policy: SyscallPolicy) -> str:
    profile: dict[str, Any] = oci_profile(policy)
    return json.dumps(profile, indent=1) + "\n"
