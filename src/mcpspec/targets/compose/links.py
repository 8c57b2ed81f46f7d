"""The helper services that keep a networked server off every bridge.

A server that needs a network path (an egress allowlist, or an HTTP port the client reaches)
does not join a network: a bridge gives the host an address on it (netavark and docker both
put the gateway on the host, and the host's IPv6 link-local address is there too), so a server
on even an ``internal: true`` network reaches every host service listening on 0.0.0.0 or ::,
and its network's DNS server forwards any name to the host's resolvers. Instead the server
joins the network namespace of its link service (``network_mode: service:<server>_link``),
which has ``network_mode: none``: loopback only, no route, no resolver. The link runs socat,
bridging loopback ports to unix sockets in a tmpfs volume of its own that only the helpers
mount:

- egress: ``127.0.0.1:3128`` (HTTP_PROXY) -> ``proxy.sock``, served by socat in the squid
  container, which forwards to squid on its own loopback; squid alone is on a network.
- an HTTP port: ``http.sock`` -> the server's port on loopback; the port service
  (``<server>_port``) publishes ``127.0.0.1:PORT`` and forwards each connection to ``http.sock``.

The helpers run the proxy image (``/bin/sh``, ``/usr/bin/socat``, ``/usr/sbin/squid``), as
65532 with no capabilities, like the proxy. Every value in their commands is an integer or a
constant of this module.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.compose.syscalls import HELPERS_FILE, seccomp_opt

HELPER_USER = "65532:65532"
LINK_DIR = "/mcpspec/link"
PROXY_SOCKET = f"{LINK_DIR}/proxy.sock"
HTTP_SOCKET = f"{LINK_DIR}/http.sock"
SOCAT = "/usr/bin/socat"
PROXY_PORT = 3128
FRONT_PORT = 8000  # the port service's own listener (unprivileged), published as the server's port
SCRATCH_SIZE = 64 * 2**20


def http_port(sandbox: EffectiveSandbox) -> int | None:
    return sandbox.transport.port if isinstance(sandbox.transport, HttpTransport) else None


def _loopback(sandbox: EffectiveSandbox) -> str:
    """The server's listening address as the link reaches it (in the same namespace: loopback)."""
    bind = sandbox.transport.bind if isinstance(sandbox.transport, HttpTransport) else None
    if bind is not None and ipaddress.ip_address(bind).version == 6:
        return "TCP6:[::1]"
    return "TCP4:127.0.0.1"


def hardening(plan: Plan, sandbox: EffectiveSandbox, role: str) -> dict[str, Any]:
    """What every helper service of a server shares: user, root, capabilities, syscall filter, limits, labels."""
    return {
        "user": HELPER_USER,
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true", seccomp_opt(HELPERS_FILE)],
        "mem_limit": 128 * 2**20,
        "memswap_limit": 128 * 2**20,
        "pids_limit": 64,
        "restart": "no",
        "labels": {"mcpspec.project": plan.project, "mcpspec.server": sandbox.name, "mcpspec.role": role},
    }


def socket_volume(volume: str) -> dict[str, Any]:
    """The mount of the helpers' socket directory (the server never mounts it)."""
    return {"type": "volume", "source": volume, "target": LINK_DIR}


def socket_volume_declaration() -> dict[str, Any]:
    """A tmpfs owned by the helpers' user, so socat can create its sockets there; docker and podman's
    local volume driver both take these options (podman-compose passes them to `podman volume create`).
    No size=: podman 4 reads it as a quota option and refuses the volume; only sockets live there."""
    uid, gid = HELPER_USER.split(":")
    return {"driver": "local", "driver_opts": {"type": "tmpfs", "device": "tmpfs", "o": f"mode=0700,uid={uid},gid={gid},nodev,nosuid,noexec"}}


def link_command(sandbox: EffectiveSandbox, egress: bool) -> list[str]:
    """The link's socat processes: the proxy port on loopback, and the server's port from its socket."""
    parts = []
    if egress:
        parts.append(f"{SOCAT} TCP4-LISTEN:{PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:{PROXY_SOCKET}")
    port = http_port(sandbox)
    if port is not None:
        parts.append(f"{SOCAT} UNIX-LISTEN:{HTTP_SOCKET},fork,unlink-early {_loopback(sandbox)}:{int(port)}")
    return ["/bin/sh", "-c", " & ".join([*parts[:-1], f"exec {parts[-1]}"])]


def link_service(plan: Plan, sandbox: EffectiveSandbox, image: str, volume: str, egress: bool) -> dict[str, Any]:
    """The owner of the server's network namespace: loopback only."""
    svc: dict[str, Any] = {"image": image, "entrypoint": link_command(sandbox, egress)}
    svc.update(hardening(plan, sandbox, "net-link"))
    svc["network_mode"] = "none"
    svc["volumes"] = [socket_volume(volume), {"type": "tmpfs", "target": "/tmp", "tmpfs": {"size": SCRATCH_SIZE}}]
    return svc


def port_service(plan: Plan, sandbox: EffectiveSandbox, image: str, volume: str, network: str, link: str) -> dict[str, Any]:
    """Publishes the server's port on the host's 127.0.0.1 and forwards each connection to the server's socket."""
    port = http_port(sandbox)
    assert port is not None
    svc: dict[str, Any] = {"image": image, "entrypoint": [SOCAT, f"TCP4-LISTEN:{FRONT_PORT},fork,reuseaddr", f"UNIX-CONNECT:{HTTP_SOCKET}"]}
    svc.update(hardening(plan, sandbox, "port-forward"))
    svc["volumes"] = [socket_volume(volume), {"type": "tmpfs", "target": "/tmp", "tmpfs": {"size": SCRATCH_SIZE}}]
    svc["networks"] = [network]
    svc["ports"] = [f"127.0.0.1:{int(port)}:{FRONT_PORT}"]
    svc["depends_on"] = [link]
    return svc


def proxy_command(squid_conf: str) -> list[str]:
    """squid on the proxy's loopback, and socat serving the link's socket in front of it."""
    return ["/bin/sh", "-c", f"{SOCAT} UNIX-LISTEN:{PROXY_SOCKET},fork,unlink-early TCP4:127.0.0.1:{PROXY_PORT} & exec /usr/sbin/squid -N -f {squid_conf}"]
