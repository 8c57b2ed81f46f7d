"""The sandbox-runtime target: for each server, srt settings and a launcher that runs it under srt.

sandbox-runtime (``srt``, npm ``@anthropic-ai/sandbox-runtime``) wraps a command in
bubblewrap on Linux (Seatbelt on macOS) with a filesystem policy, an unshared network
whose only way out is srt's filtering proxy, and a seccomp filter of its own. It has no
resource limits, no user of its choosing, no way to hand a secret in and no policy of
processes, packages or tool calls: the matrix says so, and the build reports each.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.srt.launcher import SETTINGS_SUFFIX, launcher
from mcpspec.targets.srt.settings import settings

_REAL = "tests/test_target_srt_real.py::"

USAGE = """
## Running the output

Each server gets `<server>.srt-settings.json`, its sandbox-runtime settings, and `<server>.sh`,
a launcher to use as the server's stdio command in the MCP client's config (for example
`{"command": "/opt/mcp/build/srt/repo.sh"}`). The launcher finds `srt` (npm
`@anthropic-ai/sandbox-runtime`, tested with 0.0.83) and `node` on its PATH and runs
`srt --settings <the settings> -- COMMAND...`, so the client's command line holds no value of
the spec. srt needs bubblewrap, socat and ripgrep on Linux (Debian: `apt-get install bubblewrap
socat ripgrep`), and unprivileged user namespaces.

What the launcher does before it starts srt, refusing (status 125) with one line on stderr
when a check fails:

- it refuses to start as root: the server runs as the user who starts the launcher (srt has no
  setting for another user), so start it as an unprivileged user of its own;
- every mount path must be its own canonical path (`readlink -f`): a link, or a path under one,
  would show the sandbox what the link leads to;
- neither the launcher's directory, srt's install nor node may lie in a writable mount (the server
  would rewrite its own rules, or srt, for the next run; for the same reason the build refuses a
  writable mount that holds `/usr/local/bin`, `/usr/bin` or `/bin`, where srt finds bubblewrap);
- no directory of the PATH srt gets (the server's: srt runs bubblewrap, socat, ripgrep and `which` from it, on the
  host) may lie in a writable mount, nor may that PATH hold a relative or empty entry; the launcher runs its own
  tools (`id`, `dirname`, `readlink`, `mktemp`, `rm`) from `/usr/bin`;
- (at build) the spec may not set or pass a variable that steers the host side of srt: `LD_*`,
  `GLIBC_TUNABLES`, `GCONV_PATH`, `LOCPATH`, `NLSPATH`, `HOSTALIASES`, `RES_OPTIONS`, `LOCALDOMAIN`,
  `NODE_*` but `NODE_ENV`, `OPENSSL_*`, `RIPGREP_CONFIG_PATH`, `SRT_*`,
  `CLAUDE_TMPDIR`, `CLAUDE_CODE_TMPDIR` or a proxy variable (srt would chain a parent proxy, which skips its
  resolved-address checks): srt, node and bubblewrap run on the host with the server's environment;
- `/tmp/claude` must not exist: srt always lets the sandbox write it, a host directory shared
  with whatever else uses it;
- srt runs its seccomp helper (`vendor/seccomp/<arch>/apply-seccomp` of its install) inside the
  sandbox, and binds the sockets of its proxy bridge from its temporary directory before it hides
  the denied paths: the launcher gives srt a private temporary directory (`mktemp -d`, removed when
  srt ends; a launcher killed outright leaves it) and adds it and the helper's directory to
  `allowRead` of the settings it hands srt on descriptor 3 (the file itself is never changed), and the
  temporary directory to `denyWrite` (a server that could write there would swap a proxy socket for a
  link to a host socket, which srt's bridge would connect: for the same reason, and for every other srt
  server's temporary directory, the build refuses a writable mount that holds `/tmp`).

Then it starts srt with only the declared environment (`env -i`, the `env.set` values, the
inherited names when they are set, and `PATH`), under `timeout(1)` when the spec sets
`lifecycle.max_lifetime` (srt is asked to stop 10 s before it and killed at it), and the server under
`prlimit` for `runtime.memory` (RLIMIT_AS) and `runtime.pids` (RLIMIT_NPROC). The working directory
is the spec's `workdir` (default `/`). The launcher waits for srt: a SIGTERM to it takes effect when
the server ends (it ends when the client closes its stdin).

What the settings say: reads are denied from `/` down and re-allowed for `/usr` (with the
`/bin` and `/lib` links), the dynamic-linker, TLS and timezone files of `/etc`, `/etc/hosts`
(where the sandbox finds `localhost`, the name of srt's proxy) and the spec's mounts; writes are allowed only to the rw mounts (a ro mount inside an rw one stays read-only);
the network allows only the spec's names (`host:port`, `*.domain:port`: subdomains only, as in the
spec), `strictAllowlist` on, and refuses after name resolution every metadata, loopback, private,
link-local and other special-purpose address and the spec's denied ranges
(`deniedResolvedAddresses`). Outside the re-allowed paths the sandbox sees the host's
top-level directory names over empty directories, and writes anywhere else land in memory that
is gone when the server ends.

A mount must be a host path at the same path (`from: /srv/data, to: /srv/data`): srt cannot
show a host path elsewhere, nor make workspace or tmpfs dirs, so the build refuses those (TG004),
as it refuses an address entry in `egress.allow` (srt's allowlist takes names), `egress.default:
allow`, and an HTTP server (its network namespace is its own: no client reaches it).

VS Code runs stdio servers under its own srt: `--target client --client vscode --via srt` writes
`sandboxEnabled` and the mcp.json `sandbox` block from these settings (`targets/client/README.md`).
"""

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability(
        "full",
        "allowRead of each mount's path, allowWrite of each rw mount's, denyWrite of a ro mount inside an rw one; the launcher refuses a mount "
        "path that is a link or lies under one; only a host path at the same path can be mounted (the rest is refused, TG004)",
        (_REAL + "test_a_file_the_spec_does_not_mount_is_not_there", _REAL + "test_writes_reach_the_host_only_in_rw_mounts",
         _REAL + "test_a_link_planted_in_a_writable_mount_leads_nowhere", _REAL + "test_a_mount_path_that_became_a_link_is_refused",
         "tests/test_redteam_srt.py::test_a_writable_directory_on_srt_s_path_is_refused"),
    ),
    "hidden-paths": Capability(
        "partial",
        "denyRead of / with allowRead of /usr, the linker, TLS, timezone and hosts files of /etc, the mounts, srt's seccomp helper and "
        "srt's own temporary directory (its proxy sockets); the host's top-level directory names stay visible, as empty directories",
        (_REAL + "test_a_file_the_spec_does_not_mount_is_not_there",),
    ),
    "identity": Capability(
        "partial",
        "the server runs as the user who starts the launcher (never root: the launcher refuses), in srt's user namespace with no capabilities; "
        "runtime.user is not applied",
    ),
    "env": Capability(
        "partial",
        "the launcher starts srt with env -i and the declared variables only; srt adds its own (proxy variables holding a per-run proxy "
        "credential, TMPDIR, SANDBOX_RUNTIME, JAVA_TOOL_OPTIONS and GIT_SSH_COMMAND naming its install)",
        (_REAL + "test_the_server_gets_no_host_variable_and_no_host_process",
         "tests/test_redteam_srt.py::test_a_variable_that_steers_the_host_side_of_srt_is_refused"),
    ),
    "secrets": Capability(
        "none",
        "srt hands nothing in but the environment it is started with, where a secret would stay readable to everything in the sandbox; its "
        "credential masking (credentials.envVars mode mask) swaps the real value in only on egress through its TLS-terminating proxy, which "
        "this build does not set up: no secret reaches the server",
    ),
    "egress-deny": Capability(
        "full",
        "srt unshares the network: the sandbox has its own loopback and srt's proxy, which refuses every name not allowed",
        (_REAL + "test_the_hosts_loopback_is_out_of_reach_on_both_families",
         "tests/test_redteam_srt.py::test_a_writable_tmp_cannot_redirect_srt_s_proxy_socket"),
    ),
    "egress-allowlist": Capability(
        "full",
        "network.allowedDomains holds the spec's names and ports (strictAllowlist): srt's HTTP and SOCKS proxy refuses every other name and port",
        (_REAL + "test_only_a_listed_name_on_its_port_gets_through_the_proxy",),
    ),
    "metadata-blocking": Capability(
        "full",
        "srt refuses an allowed name that resolves to loopback, link-local, metadata or the host's own addresses, and deniedResolvedAddresses "
        "adds every other special-purpose range and the spec's denied ranges",
        (_REAL + "test_an_allowed_name_that_resolves_to_a_refused_address_is_refused",),
    ),
    "listeners": Capability(
        "partial",
        "the server may listen on its own network namespace's loopback, which nothing outside reaches; nothing stops the listen itself",
        (_REAL + "test_the_hosts_loopback_is_out_of_reach_on_both_families",),
    ),
    "memory": Capability("partial", "prlimit --as inside the sandbox: an address-space limit, which memfd and shared memory pass",
                         (_REAL + "test_memory_and_processes_stop_at_the_rlimits",)),
    "pids": Capability("partial", "prlimit --nproc inside the sandbox: RLIMIT_NPROC counts every process of the user the server runs as",
                       (_REAL + "test_memory_and_processes_stop_at_the_rlimits",)),
    "cpu": Capability("none", "srt sets no CPU limit"),
    "lifetime": Capability("partial", "timeout(1) asks srt to stop (and srt its sandbox) 10 s before max_lifetime and kills it at max_lifetime; "
                           "no test measures it"),
    "syscall-filter": Capability(
        "partial",
        "srt's own seccomp helper refuses Unix sockets (abstract ones too) and io_uring; the project's syscall policy is not applied",
        (_REAL + "test_the_server_gets_no_host_variable_and_no_host_process",),
    ),
    "idle-timeout": Capability("none", "srt cannot tell an idle MCP session from a slow one"),
    "package-install": Capability("none", "registries are reachable only if the egress allowlist lists them; registries and lockfile are not checked"),
    "process-policy": Capability("none", "srt has no command allow or deny list: every program the sandbox can read may run"),
    "workspace-lifecycle": Capability("none", "srt makes no workspace: mounts are host paths"),
    "audit-log": Capability("none", "no audit line is written (srt logs violations only with --debug)"),
    "image": Capability("none", "the server runs from the host's /usr and its mounts, not from the pinned image"),
    "call-policy": Capability(
        "none",
        "approvals, rate limits and call timeouts act on MCP messages, which srt does not see: `mcpspec run` enforces them in front of a sandbox",
    ),
}


class SrtTarget:
    name = "srt"
    description = "sandbox-runtime (srt) settings and a launcher for each stdio server"
    usage = USAGE
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset()

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        # One gap per secret, at the secret's source (where a waiver names it), in place of the matrix's one for them all.
        gaps = [Gap("secrets", "none", (*grant.secret_path, "provider"), f"secret {grant.name!r} does not reach the server: "
                    + CAPABILITIES["secrets"].how) for grant in sandbox.secrets]
        overrides: Overrides = {"secrets": ("full", "")} if gaps else {}  # lowered to none by the gaps above
        if sandbox.env.inherit == "all":
            gaps.append(Gap("metadata-blocking", "partial", sandbox.origin("env.inherit"), "the whole host environment reaches srt, which "
                            "runs on the host: a proxy variable there makes srt chain a parent proxy, which skips its resolved-address "
                            "checks (list the variables the server needs instead)"))
        return gaps, overrides

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        if sandbox.transport.type != "stdio":
            raise Refused("listeners", (*sandbox.path, "transport"), "srt gives the server a network namespace of its own: no client outside "
                          "reaches an HTTP server in it (use the stdio transport)")
        rules = json.dumps(settings(sandbox), indent=2, ensure_ascii=True) + "\n"
        script = launcher(plan, sandbox)
        return Emitted({f"{sandbox.name}{SETTINGS_SUFFIX}": rules, f"{sandbox.name}.sh": script}, executable={f"{sandbox.name}.sh"})

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        return Emitted()


TARGET = SrtTarget()
