"""
## What it does
Flags a mount that exposes a container runtime: the Docker, containerd,
Podman or CRI-O socket, a directory holding one (`/run`, `/var/run`), or
Docker's state directory `/var/lib/docker`.

## Why is this risky
Whoever can talk to a container runtime socket can start a privileged
container with the host's root filesystem mounted: the socket is root on the
host, read-only mount or not (connecting to a socket is not a write to the
file). A server that reaches it, or a model steered into using it, leaves
every sandbox boundary behind.

## Example
```yaml
version: 1
project: demo
servers:
  builder:
    command: [mcp-docker-builder]
    mounts:
      - {from: /var/run/docker.sock, to: /var/run/docker.sock}
```

## Use instead
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    context: {mode: ro}
servers:
  builder:
    description: Builds images with rootless BuildKit inside its own sandbox; no host runtime socket.
    command: [mcp-buildkit-builder, --context, /workspace/context]
    mounts:
      - {from: workspace.context, to: /workspace/context}
```

## References
- MCP specification, Security Best Practices: "Local MCP Server Compromise"
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep
- CWE-250 Execution with Unnecessary Privileges, CWE-269 Improper Privilege Management
- Docker documentation, "Protect the Docker daemon socket"
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import CONTAINER_SOCKETS, components, overlapping
from mcpspec.rules.filesystem._common import launched_host_mounts
from mcpspec.rules.grouping import listing

# Runtime sockets live elsewhere too (Docker Desktop's ~/.docker/run, rootless XDG_RUNTIME_DIR).
_SOCKET_NAMES = ("docker.sock", "containerd.sock", "podman.sock", "crio.sock")


def check(plan: Plan) -> Iterator[Finding]:
    for server, mount in launched_host_mounts(plan):
        found = overlapping(mount.location, CONTAINER_SOCKETS)
        name = components(mount.location)[-1]
        if name in _SOCKET_NAMES:
            message = f"server {server.name!r} mounts {mount.location}, a container runtime socket that is root on the host"
        elif any(within for _, within in found):
            message = f"server {server.name!r} mounts {mount.location}, the container runtime's state, which is root on the host"
        elif found:
            held = [pattern.replace("{uid}", "<uid>") for pattern, _ in found]
            message = f"server {server.name!r} mounts {mount.location}, which holds {listing(held)}: container runtime access is root on the host"
        else:
            continue
        yield Finding(path=(*mount.path, "from"), message=message)


RULE = Rule(
    id="FS002",
    slug="container-socket-mounted",
    severity="critical",
    summary="A container runtime socket is mounted into a sandbox",
    check=check,
    doc=__doc__ or "",
)
