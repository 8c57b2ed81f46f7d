"""The compose target: one ``compose.yaml`` for the whole spec, a service per server.

Each server is a service that runs its pinned image read-only, as a non-root user,
with no capabilities, no new privileges, process, memory and CPU limits, a
size-limited tmpfs at /tmp, only its declared mounts and variables, and its secrets
through compose ``secrets:``. A stdio server without egress has ``network_mode: none``;
an HTTP one gets an ``internal: true`` network of its own. An allowlist puts the server
on an internal network whose only other member is a squid service (the shared
generator, ``targets.egress``) that also reaches out; the server gets the proxy
variables. The entrypoint shim (``entrypoint.sh``, shipped beside the file) exports
secrets given ``as: {env: ...}`` from their files and enforces max_lifetime.

Modules: ``service`` (the services as data), ``gaps`` (what cannot be enforced),
``document`` (the compose file), ``reader`` (what a built file grants, read back).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.common import header_text
from mcpspec.targets.compose.document import compose_file, shim_text
from mcpspec.targets.compose.gaps import server_gaps
from mcpspec.targets.compose.service import SHIM_FILE, SQUID_LOG, has_proxy, names, service, shim_args, squid_runtime
from mcpspec.targets.egress import egress_plan, squid_config
from mcpspec.targets.escape import Unrepresentable

__all__ = ["CAPABILITIES", "TARGET", "USAGE", "ComposeTarget"]

_REAL = "tests/test_target_compose_real.py::"

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability("full", "long-syntax bind volumes (read_only: true for ro), workspace dirs under ${MCPSPEC_RUN_DIR}, tmpfs dirs of their size; paths a mount option could split are refused", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "hidden-paths": Capability("full", "the container sees its image and its declared mounts only; no host path is shared unless the spec mounts it", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "identity": Capability("full", "user: uid:gid (uid or gid 0 is refused: root in a container is root on the host under a rootful engine), cap_drop: [ALL], security_opt: [no-new-privileges:true]", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "env": Capability("full", "environment: lists env.set (with $ doubled: no interpolation), the proxy variables, and inherited names; the image's own ENV and what the engine sets (PATH, HOSTNAME, HOME, container) stay", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "secrets": Capability("full", "compose secrets: from a file (read-only at as.file) or, for as.env, at /run/secrets/mcpspec-env/<VAR>, exported by the entrypoint shim; never an environment: value; from compose's environment only under docker compose; systemd-credential, vault and k8s-secret cannot be read", (_REAL + "test_secrets_land_only_as_declared",)),
    "egress-deny": Capability("full", "network_mode: none (stdio) or an internal: true network of its own (HTTP, allowlists): no route out; egress.via: direct opens the network", (_REAL + "test_no_route_out_when_egress_is_denied",)),
    "egress-allowlist": Capability("full", "an internal network whose only other member is squid (the --proxy-image) with the listed names and ports; HTTP_PROXY and HTTPS_PROXY point at it; without --proxy-image the server gets no network", (_REAL + "test_only_the_allowlisted_name_goes_through_the_proxy",)),
    "metadata-blocking": Capability("full", "squid refuses metadata names and addresses and the special-purpose ranges after name resolution; direct egress cannot", (_REAL + "test_only_the_allowlisted_name_goes_through_the_proxy",)),
    "listeners": Capability("full", "network_mode: none leaves only the container's loopback; an internal network holds only the server (and its proxy, which refuses private addresses); ports are published on 127.0.0.1 only", (_REAL + "test_no_route_out_when_egress_is_denied",)),
    "memory": Capability("partial", "mem_limit, and memswap_limit equal to it (docker compose); podman-compose ignores memswap_limit, so podman lets the container swap as much again"),
    "pids": Capability("full", "pids_limit", (_REAL + "test_limits_hold",)),
    "cpu": Capability("partial", "cpus; no real test measures the throttling"),
    "lifetime": Capability("full", "the entrypoint shim runs the server as its child and sends SIGTERM at max_lifetime, SIGKILL 5 s later (the image needs /bin/sh and sleep)", (_REAL + "test_limits_hold",)),
    # Issue 25 item 2 replaces this with the project's policy (mcpspec.targets.seccomp).
    "syscall-filter": Capability("partial", "the engine's default seccomp profile: podman's allows keyctl, AF_VSOCK and AF_NETLINK sockets, ptrace of the container's own processes and user namespaces; not the project's policy yet"),
    "idle-timeout": Capability("none", "compose cannot tell an idle MCP session from a slow one; the client must stop idle runs"),
    "package-install": Capability("partial", "registries are reachable only if the egress allowlist lists them; registries and lockfile are not checked"),
    "process-policy": Capability("none", "compose cannot hide commands inside an image"),
    "workspace-lifecycle": Capability("partial", "workspace dirs come from the run's directory (${MCPSPEC_RUN_DIR}); creating it per run and removing it after `down` is the caller's"),
    "audit-log": Capability("partial", "the engine's container logs; the egress proxy logs each destination to its stdout; tool calls are not logged"),
    "image": Capability("partial", "images are written as the spec pins them (NAME@sha256:..., verified by the engine when it pulls); an unpinned image is reported"),
    "call-policy": Capability("none", "approvals, rate limits and call timeouts act on MCP messages, which a sandbox does not see: `mcpspec run` enforces them, in front of the server's bwrap launcher"),
}

USAGE = """\
The build writes `compose.yaml` (every server that runs here), `mcpspec-entrypoint.sh`
(when a server has secrets given `as: {env: ...}` or a max_lifetime), and
`<server>.squid.conf` for each server with an egress allowlist. Keep them in one
directory: the file mounts the others by relative path.

Inputs:

- `--proxy-image NAME@sha256:...`: the egress proxy's image, for servers with an
  allowlist. It needs Debian's squid at `/usr/sbin/squid` (built with mmdebstrap, for
  instance). Without it such a server gets no network and the build says so (TG001).
- `MCPSPEC_RUN_DIR`: the directory of this run; workspace dirs are its subdirectories
  (`$MCPSPEC_RUN_DIR/<dir>`). Create them before starting: compose does not.
- Images run as the spec's user with a read-only root: the entrypoint shim needs
  `/bin/sh` (and `sleep` for max_lifetime), HTTP healthchecks need `curl` in the image.

One isolated stack per agent run: a project name per run keeps containers, networks
and the run directory apart.

```sh
mcpspec build mcp-sandbox.yaml --target compose --proxy-image localhost/squid@sha256:... --out build/compose
run=coder-$(date +%s)
export MCPSPEC_RUN_DIR=/srv/mcp/workspaces/coder/$run
mkdir -p "$MCPSPEC_RUN_DIR"/input "$MCPSPEC_RUN_DIR"/output
# a stdio server: the MCP client's command (starts its egress proxy first)
docker compose -p "$run" -f build/compose/compose.yaml run --rm -T <server>
podman-compose -p "$run" -f build/compose/compose.yaml run --rm -T <server>
# HTTP servers and proxies, then the end of the run
docker compose -p "$run" -f build/compose/compose.yaml up -d <server>
docker compose -p "$run" -f build/compose/compose.yaml down
podman-compose -p "$run" -f build/compose/compose.yaml down
```

A server finds its proxy by name (`mcpspec-egress`) on its internal network: podman needs
the netavark network backend with aardvark-dns for that (`[network] network_backend =
"netavark"` in containers.conf where CNI was used before); docker's networks resolve names.

The file sets `x-podman: {in_pod: false}`: podman-compose would otherwise put every
service in one pod, sharing one network namespace.

An HTTP server with egress denied or an allowlist is on an `internal: true` network,
where no port can be published: the agent reaches it by joining that network
(`<run>_<server>_net`). With `egress.via: direct` its port is published on
`127.0.0.1` only. Labels `mcpspec.project`, `mcpspec.server` and `mcpspec.agents`
name each container's origin.
"""


class ComposeTarget:
    name = "compose"
    description = "a Docker Compose file (compose-spec): a hardened service per server, networks for egress, a squid egress proxy service"
    usage = USAGE
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset({"proxy_image"})

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        return server_gaps(plan, sandbox, options)

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        service(plan, sandbox, options)  # refuses what compose cannot carry; the file itself is the project's
        if not has_proxy(sandbox, options):
            return Emitted()
        header = header_text(plan, f"the egress allowlist of server {sandbox.name}")
        try:
            return Emitted({names(sandbox.name).squid_file: squid_config(egress_plan(sandbox), header, squid_runtime()) + SQUID_LOG})
        except Unrepresentable as exc:
            raise Refused("egress-allowlist", sandbox.origin("egress.allow"), str(exc)) from None

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        if not built:
            return Emitted()
        files = {"compose.yaml": compose_file(plan, built, options)}
        if any(shim_args(sandbox) for sandbox in built):
            files[SHIM_FILE] = shim_text()
        return Emitted(files)


TARGET = ComposeTarget()
