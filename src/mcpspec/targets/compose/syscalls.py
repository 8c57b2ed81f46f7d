"""The services' syscall filters: the project's one seccomp policy (``targets.seccomp``) as the
OCI profiles docker and podman read, written beside compose.yaml.

``security_opt: [seccomp=./FILE]`` is read relative to the project directory by docker compose
(which loads the profile itself and sends it to the engine) and by podman-compose (which runs
podman from that directory). A server's profile allows the socket families its egress needs;
the helpers (link, port service, squid) share one that allows unix, IPv4 and IPv6.
"""

from __future__ import annotations

import json

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.targets.seccomp import SyscallPolicy, oci_profile, syscall_policy
from mcpspec.targets.seccomp.policy import policy_for_families

HELPERS_FILE = "mcpspec-helpers.seccomp.json"
HELPER_FAMILIES = ("AF_INET", "AF_INET6", "AF_UNIX")


def server_file(server: str) -> str:
    return f"{server}.seccomp.json"


def seccomp_opt(file: str) -> str:
    return f"seccomp=./{file}"


def _text(policy: SyscallPolicy) -> str:
    return json.dumps(oci_profile(policy), indent=1, sort_keys=True) + "\n"


def server_profile(sandbox: EffectiveSandbox) -> str:
    return _text(syscall_policy(sandbox))


def helpers_profile() -> str:
    return _text(policy_for_families(HELPER_FAMILIES))
