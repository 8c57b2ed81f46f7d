"""The compose target: one ``compose.yaml`` for the whole spec, a service per server.

Each server is a service that runs its pinned image read-only, as a non-root user,
with no capabilities, no new privileges, the project's syscall filter (``syscalls``),
process, memory and CPU limits, a size-limited tmpfs at /tmp, only its declared mounts
and variables, and its secrets through compose ``secrets:``. No server joins a network (a bridge, even an internal one,
puts the host's address and a forwarding DNS server in its reach): a stdio server without
egress has ``network_mode: none``; a server with an allowlist or an HTTP port lives in
the namespace of its link service (``network_mode: none`` itself), whose socat bridges
loopback to unix sockets served by its squid service (the shared generator,
``targets.egress``) and by its port service, which publishes the port (``links``).
The entrypoint shim (``entrypoint.sh``, shipped beside the file) exports
secrets given ``as: {env: ...}`` from their files and enforces max_lifetime.

Modules: ``service`` (the services as data), ``syscalls`` (their seccomp profiles),
``links`` (the helpers that bridge a namespace without a network to the proxy and the
published port), ``gaps`` (what cannot be enforced), ``document`` (the compose file),
``reader`` (what a built file grants, read back).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.common import header_text
from mcpspec.targets.compose.document import compose_file, shim_text
from mcpspec.targets.compose.envsecrets import WRAPPER_FILE, from_environment, wrapper
from mcpspec.targets.compose.gaps import server_gaps
from mcpspec.targets.compose.service import SHIM_FILE, SQUID_LOG, delivered, has_proxy, linked, names, service, shim_args, squid_runtime
from mcpspec.targets.compose.syscalls import HELPERS_FILE, helpers_profile, server_file, server_profile
from mcpspec.targets.egress import egress_plan, squid_config
from mcpspec.targets.escape import Unrepresentable

__all__ = ["CAPABILITIES", "TARGET", "USAGE", "ComposeTarget"]

_REAL = "tests/test_target_compose_real.py::"
_SOURCES = "tests/test_secret_sources.py::"

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability("full", "long-syntax bind volumes (read_only: true for ro), workspace dirs under ${MCPSPEC_RUN_DIR}, tmpfs dirs of their size; paths a mount option could split are refused", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "hidden-paths": Capability("full", "the container sees its image and its declared mounts only; no host path is shared unless the spec mounts it", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "identity": Capability("full", "user: uid:gid (uid or gid 0 is refused: root in a container is root on the host under a rootful engine), cap_drop: [ALL], security_opt: [no-new-privileges:true]", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "env": Capability("full", "environment: lists env.set (with $ doubled: no interpolation), the proxy variables, and inherited names; the image's own ENV and what the engine sets (PATH, HOSTNAME, HOME, container) stay", (_REAL + "test_host_is_invisible_and_mounts_hold",)),
    "secrets": Capability("full", "compose secrets: from a file (read-only at as.file) or, for as.env, at /run/secrets/mcpspec-env/<VAR>, exported by the entrypoint shim; never an environment: value; a secret of provider env is written by mcpspec-compose.sh from its own environment to a file in a private directory in memory (0700) for the command it runs, so docker compose and podman-compose both run it (podman-compose refuses an environment: source), made only in an XDG_RUNTIME_DIR (else /dev/shm) of the user's or root's that no one else may write or that is sticky, and removed on every signal a shell can catch; systemd-credential, vault and k8s-secret cannot be read", (_REAL + "test_secrets_land_only_as_declared", _REAL + "test_an_env_secret_runs_under_podman_compose_and_leaves_no_trace", _SOURCES + "test_the_compose_wrapper_refuses_a_runtime_directory_another_user_could_swap_its_secrets_directory_in", _SOURCES + "test_the_compose_wrapper_removes_the_secrets_whatever_signal_ends_it")),
    "egress-deny": Capability("full", "no server joins a network: network_mode: none, or (an HTTP server) the namespace of its link service, itself network_mode: none: loopback only, so no route, no host address (a bridge's gateway is the host's, under docker and podman alike, internal or not) and no DNS server (aardvark-dns and docker's resolver forward any name upstream); egress.via: direct opens the network", (_REAL + "test_no_route_out_when_egress_is_denied", _REAL + "test_no_host_address_or_resolver_in_reach_of_a_networked_server")),
    "egress-allowlist": Capability("full", "the server lives in its link's namespace (loopback only); HTTP_PROXY and HTTPS_PROXY are the link's 127.0.0.1:3128, which socat forwards through a unix socket to squid (the --proxy-image, with socat), the only service on a network, with the listed names and ports; only squid resolves names; squid passes only http:// and https:// URLs and CONNECT (its manager, its internal pages, TRACE and other schemes are refused); without --proxy-image the server gets no network", (_REAL + "test_only_the_allowlisted_name_goes_through_the_proxy", _REAL + "test_no_host_address_or_resolver_in_reach_of_a_networked_server", _REAL + "test_the_proxy_answers_nothing_itself_and_passes_only_http")),
    "metadata-blocking": Capability("partial", "squid refuses metadata names and addresses and the special-purpose ranges after name resolution; direct egress cannot. Partial: the host's own public addresses are not refused: squid runs in its container, routed out through the host, where they are not known (the bwrap and systemd proxies read them at start), so a host service listening on all addresses would be reachable through the proxy at the host's public address (not attacked here: the test machine has no public address the tests may use)", (_REAL + "test_only_the_allowlisted_name_goes_through_the_proxy", _REAL + "test_no_host_address_or_resolver_in_reach_of_a_networked_server")),
    "listeners": Capability("full", "every server's namespace has loopback only (network_mode: none, or its link's): nothing but its helpers reaches a listener; an HTTP server's port is published on 127.0.0.1 by its port service, through a unix socket to the link", (_REAL + "test_no_route_out_when_egress_is_denied", _REAL + "test_no_host_address_or_resolver_in_reach_of_a_networked_server")),
    "memory": Capability("partial", "mem_limit, and memswap_limit equal to it (docker compose); podman-compose ignores memswap_limit, so podman lets the container swap as much again"),
    "pids": Capability("full", "pids_limit", (_REAL + "test_limits_hold",)),
    "cpu": Capability("partial", "cpus; no real test measures the throttling"),
    "lifetime": Capability("full", "the entrypoint shim runs the server as its child and sends SIGTERM at max_lifetime, SIGKILL 5 s later (the image needs /bin/sh and sleep)", (_REAL + "test_limits_hold",)),
    # Issue 25 item 2 replaces this with the project's policy (mcpspec.targets.seccomp).
    "syscall-filter": Capability("full", "security_opt: seccomp=./<server>.seccomp.json on every service, helpers included (mcpspec-helpers.seccomp.json): the project's syscall policy as an OCI profile (no io_uring, keyrings, bpf, perf_event_open, userfaultfd, ptrace, process_vm_*, mount, new namespaces; socket families from the server's egress), instead of the engine's default (podman's allows keyctl, AF_VSOCK and AF_NETLINK sockets, ptrace of the container's own processes and user namespaces); docker compose reads the file from the project directory, podman-compose from its working directory (COMPOSE_PROJECT_DIR)", (_REAL + "test_syscall_filter_refuses_what_the_policy_refuses",)),
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
(when a server has secrets given `as: {env: ...}` or a max_lifetime), `mcpspec-compose.sh`
(when a secret is read from the environment, `provider: env`: run every compose command
through it, `./mcpspec-compose.sh podman-compose -p RUN ... up -d`; it writes each value to
a file in a private directory in memory for the command, since podman-compose refuses a
compose secret with an `environment:` source), and
`<server>.squid.conf` for each server with an egress allowlist. Keep them in one
directory: the file mounts the others by relative path.

Inputs:

- `--proxy-image NAME@sha256:...`: the image of every helper service (egress proxy,
  link, port service), for servers with an allowlist or an HTTP port. It needs `/bin/sh`,
  Debian's squid at `/usr/sbin/squid` and socat at `/usr/bin/socat` (built with
  mmdebstrap, for instance). Without it a server with an allowlist gets no network
  (TG001) and an HTTP server's port is not published (TG002).
- `MCPSPEC_RUN_DIR`: the directory of this run; workspace dirs are its subdirectories
  (`$MCPSPEC_RUN_DIR/<dir>`). Create them before starting: compose does not.
- Images run as the spec's user with a read-only root: the entrypoint shim needs
  `/bin/sh` (and `sleep` for max_lifetime), HTTP healthchecks need `curl` in the image.

Every service runs under a seccomp profile written beside the file (`<server>.seccomp.json`,
`mcpspec-helpers.seccomp.json`): the project's syscall policy, stricter than the engines'
defaults (podman's allows AF_VSOCK and AF_NETLINK sockets, keyctl and new user namespaces).
`security_opt` names each by a relative path: docker compose reads it from the compose
file's directory, podman-compose from its working directory, so run podman-compose in the
build directory, or set `COMPOSE_PROJECT_DIR` to it (podman-compose then changes to it before
reading `-f`: give an absolute path). A service whose profile is not found does not start.

One isolated stack per agent run: a project name per run keeps containers, networks
and the run directory apart.

```sh
mcpspec build mcp-sandbox.yaml --target compose --proxy-image localhost/squid@sha256:... --out build/compose
run=coder-$(date +%s)
export MCPSPEC_RUN_DIR=/srv/mcp/workspaces/coder/$run
mkdir -p "$MCPSPEC_RUN_DIR"/input "$MCPSPEC_RUN_DIR"/output
# a stdio server: the MCP client's command (starts its helpers first)
docker compose -p "$run" -f build/compose/compose.yaml run --rm -T <server>
(cd build/compose && podman-compose -p "$run" run --rm -T <server>)
# an HTTP server (its port on 127.0.0.1), then the end of the run
docker compose -p "$run" -f build/compose/compose.yaml up -d <server>
docker compose -p "$run" -f build/compose/compose.yaml down -v
(cd build/compose && podman-compose -p "$run" down -v)
```

No server joins a network. Docker and podman (netavark) both give the host an address on
every bridge network, `internal: true` ones included, so a container there reaches every
host service listening on 0.0.0.0 or ::, and the network's DNS server (aardvark-dns,
docker's embedded resolver) forwards any name to the host's resolvers. No network option
of both engines removes both (docker's `com.docker.network.bridge.inhibit_ipv4` is about
the bridge's IPv4 address only; podman 4.3 has no such option, and `disable_dns` leaves
the host's resolvers in resolv.conf). So a server with an allowlist or an HTTP port runs in the network namespace of its link
service `<server>_link` (`network_mode: service:<server>_link`), which has
`network_mode: none`: loopback only. The link's socat listens on 127.0.0.1:3128 (the
server's HTTP_PROXY) and forwards to a unix socket in a tmpfs volume (`<server>_sockets`)
that only the helpers mount; socat in the squid service (`<server>_egress`, the only
service on a network) passes it to squid. An HTTP server's port is published on
`127.0.0.1:PORT` by its port service `<server>_port`, which forwards each connection to
the link's socket, and the link to the server's loopback port. `up -d <server>` starts
its helpers first (depends_on); `run --rm -T <server>` starts them too; `down -v` removes
the socket volumes with the rest. The tests run this
layout with podman 4.3 (netavark 1.4, aardvark-dns 1.4) and podman-compose 1.6; docker
compose reads the same compose-spec keys (`network_mode: service:`, a `local` volume with
tmpfs `driver_opts`), but no test here runs docker.

The file sets `x-podman: {in_pod: false}`: podman-compose would otherwise put every
service in one pod, sharing one network namespace.

With `egress.via: direct` a server is on a bridge of its own and its port is published
on `127.0.0.1` only. Labels `mcpspec.project`, `mcpspec.server`, `mcpspec.agents` (and
`mcpspec.role` on helpers) name each container's origin.
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
        files = {server_file(sandbox.name): server_profile(sandbox)}
        if not has_proxy(sandbox, options):
            return Emitted(files)
        header = header_text(plan, f"the egress allowlist of server {sandbox.name}")
        try:
            files[names(sandbox.name).squid_file] = squid_config(egress_plan(sandbox), header, squid_runtime()) + SQUID_LOG
        except Unrepresentable as exc:
            raise Refused("egress-allowlist", sandbox.origin("egress.allow"), str(exc)) from None
        return Emitted(files)

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        if not built:
            return Emitted()
        files = {"compose.yaml": compose_file(plan, built, options)}
        if any(shim_args(sandbox) for sandbox in built):
            files[SHIM_FILE] = shim_text()
        if any(linked(sandbox, options) for sandbox in built):
            files[HELPERS_FILE] = helpers_profile()
        from_env = [grant for sandbox in built for grant in delivered(sandbox) if from_environment(grant)]
        if from_env:
            files[WRAPPER_FILE] = wrapper(plan, from_env)
            return Emitted(files, {WRAPPER_FILE})
        return Emitted(files)


TARGET = ComposeTarget()
