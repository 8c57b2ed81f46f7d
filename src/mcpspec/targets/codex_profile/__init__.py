"""The codex-profile target: a Codex permission profile per stdio server, and the Codex entry that runs it.

Codex starts MCP servers as plain processes (it sandboxes the commands its model runs, not
its servers). This target writes one file, `codex-config.toml`, to merge into Codex's
config: a `[permissions.mcpspec-SERVER]` profile per server and a `[mcp_servers.SERVER]`
entry whose command is `codex sandbox --permission-profile mcpspec-SERVER -- COMMAND`,
so every server runs in Codex's own Linux sandbox (bubblewrap and seccomp) under its profile.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import tomli_w

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.codex_profile.profile import HELPER_DIR, Served, profile_name, served
from mcpspec.targets.common import header
from mcpspec.targets.egress import egress_plan

CONFIG_FILE = "codex-config.toml"
_REAL = "tests/test_target_codex_profile_real.py::"
_FILES = _REAL + "test_the_server_reads_and_writes_only_what_the_spec_mounts"
_NET = _REAL + "test_no_address_of_either_family_is_reachable_and_nothing_listens"
_PROC = _REAL + "test_nothing_of_the_host_reaches_the_server_through_proc"
_SYSCALLS = _REAL + "test_the_dangerous_syscalls_are_refused_and_the_launchers_keyring_is_out_of_reach"
_ROOT_TEST = "tests/test_redteam_codex_cedar.py::test_a_server_started_by_root_writes_host_sysctls_so_no_boundary_row_is_full"
_FD_TEST = "tests/test_redteam_codex_cedar.py::test_a_descriptor_left_open_by_codexs_parent_reaches_the_server_so_no_boundary_row_is_full"
# Codex's bubblewrap covers only the /proc entries its caller could write, and a profile entry for /proc/sys is mounted
# under the new /proc: a server of a Codex started as root writes every host sysctl (kernel.core_pattern included,
# a command the host kernel runs outside every namespace). And Codex closes only its low descriptors: one its parent
# left open past them (not close-on-exec) reaches the sandbox, and the helper, pid 1 there, keeps it in /proc/1/fd.
_HOST_LEAKS = ("; partial: Codex started as root leaves the server host root to every sysctl under /proc/sys (kernel.core_pattern: "
            "a command the host runs outside the sandbox), which no profile entry covers: start Codex as a user other than root; "
            "and a descriptor the process that starts Codex leaves open (not close-on-exec, numbered past the ones Codex closes, "
            "such as 300) reaches the server, in /proc/1/fd too: a directory there reads every file under it, a socket reaches "
            "its peer, whatever the profile says")
CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability(
        "partial",
        "each mount's host path is granted read (ro) or write (rw) in the profile's filesystem table; no other file is writable. "
        "Codex binds each path where it is on the host (a mount whose `to` differs is found at its host path: TG002), makes no tmpfs "
        "(a tmpfs dir is a directory on disk: TG002) and keeps .git, .codex, .agents and .aws read-only inside a writable path; "
        "a write anywhere else lands in the sandbox's own tmpfs root, never on the host" + _HOST_LEAKS,
        (_FILES, _REAL + "test_a_read_only_mount_inside_a_writable_one_stays_read_only", _ROOT_TEST, _FD_TEST)),
    "hidden-paths": Capability(
        "partial",
        "only Codex's `:minimal` set (/usr, /etc, /bin, /sbin, /lib*, /dev, /proc: what a process needs to start), Codex's helper "
        f"directory ({HELPER_DIR}, links to Codex's binary) and the mounts exist; all of /etc is readable, and a Codex installed outside "
        "/usr needs its directory added (the README says how)" + _HOST_LEAKS,
        (_FILES, _PROC, _ROOT_TEST, _FD_TEST)),
    "identity": Capability(
        "partial",
        "the server runs as the user who starts Codex, in a user namespace with no capabilities (CapEff 0, no_new_privs); "
        "runtime.user and runtime.group are not applied"),
    "env": Capability(
        "partial",
        "the sandboxed command is `env -i` with env.set, the variables env.inherit names (passed to the entry as env_vars) and "
        "PATH, nothing else; Codex's sandbox helper, the server's parent inside the sandbox, still holds the environment Codex "
        "starts servers with (its /proc/PID/environ: Codex's short default list such as HOME, PATH and USER, and env_vars); "
        "env.inherit all passes that environment on"),
    "secrets": Capability("none", "a profile carries no secret and the entry delivers none: give the server its secrets yourself"),
    "egress-deny": Capability(
        "partial", "the profile disables the network: Codex's seccomp filter refuses AF_INET and AF_INET6 sockets (and netlink, packet, vsock)"
        + _HOST_LEAKS, (_NET, _ROOT_TEST, _FD_TEST)),
    "egress-allowlist": Capability(
        "none",
        "the profile grants no network: Codex's domain rules name hosts without ports and bind only through Codex's own proxy "
        "(features.network_proxy), so the spec's allow list would be widened to every port of each name; the server reaches nothing"),
    "metadata-blocking": Capability("partial", "no address of either family is reachable: no inet socket can be made" + _HOST_LEAKS, (_NET, _ROOT_TEST, _FD_TEST)),
    "listeners": Capability("partial", "no inet socket can be made, so nothing listens on a network address" + _HOST_LEAKS, (_NET, _ROOT_TEST, _FD_TEST)),
    "memory": Capability(
        "partial",
        "a profile sets no memory limit: the entry starts the server under `prlimit --as`, the address space of each process "
        "(not the sandbox's total: every child gets as much again)",
        (_REAL + "test_memory_past_the_limit_is_refused_to_the_server",)),
    "pids": Capability(
        "partial",
        "a profile sets no process limit: the entry starts the server under `prlimit --nproc`, RLIMIT_NPROC, which counts every "
        "process of the invoking user (not only the sandbox's) and does not hold for root",
        (_REAL + "test_a_fork_bomb_stops_at_the_process_limit_for_a_user_other_than_root",)),
    "cpu": Capability("none", "a profile sets no CPU limit"),
    "lifetime": Capability(
        "partial",
        "a profile sets no lifetime: the entry starts the server under `timeout` (SIGTERM at max_lifetime, SIGKILL 5 s later), "
        "which ends the server and its process group; a process that leaves the group lives until Codex ends the session",
        (_REAL + "test_max_lifetime_ends_the_server_and_the_processes_it_started",)),
    "syscall-filter": Capability(
        "partial",
        "Codex's own seccomp filter, not the project's: ptrace, process_vm_readv, io_uring_setup, bpf, mount, setns, request_key and "
        "unshare of the mount and network namespaces are refused; keyctl, add_key, perf_event_open, userfaultfd, personality and "
        "user namespaces are allowed. Codex hands down the session keyring of whoever starts it: the entry joins a fresh one "
        "(a line of perl, /usr/bin/perl) before the server starts, so a key there is out of the server's reach",
        (_SYSCALLS,)),
    "idle-timeout": Capability("none", "nothing ends an idle session"),
    "package-install": Capability("partial", "no registry is reachable (the profile has no network); registries and lockfile are not checked"),
    "process-policy": Capability("none", "commands are neither allowed nor denied by name"),
    "workspace-lifecycle": Capability(
        "none", "workspace dirs are one fixed directory per agent (run id `codex`): nothing resets, removes or copies them"),
    "audit-log": Capability("none", "nothing is logged"),
    "image": Capability("none", "the server runs from the host's /usr and its mounts, not from the pinned image"),
    "call-policy": Capability(
        "partial",
        "Codex's entry lists the spec's tools as enabled_tools when unlisted tools are denied (Codex hides the others); approvals, "
        "rate limits and call timeouts are not carried (`mcpspec run` enforces them: the client target)"),
}

USAGE = """
## Running the output

    mcpspec build mcp-sandbox.yaml --target codex-profile --out build/codex-profile

The build writes `codex-config.toml`: for each stdio server, a permission profile
`[permissions.mcpspec-SERVER]` and an entry `[mcp_servers.SERVER]` that starts it as

    codex sandbox --permission-profile mcpspec-SERVER -- COMMAND...

Codex does not sandbox MCP servers itself; through this entry each one runs in Codex's Linux
sandbox (bubblewrap and seccomp) with its profile. Merge the file into `~/.codex/config.toml`
(or a trusted project's `.codex/config.toml`). Codex refuses a config that defines `[permissions]`
without `default_permissions`, so the file sets it to `:read-only` (the profile Codex applies to
the commands its model runs): keep your own line instead if you have one, or your `sandbox_mode`.

The profile reads Codex's `:minimal` set (what a process needs to start: /usr, /etc, /bin, /sbin,
/lib*, /dev and /proc) and `~/.codex/tmp/arg0-linux`, where Codex keeps the helper it runs inside
the sandbox (a link to its own binary). With `CODEX_HOME` set elsewhere, change that path. When
Codex is installed outside /usr (npm with a prefix in your home, nvm), add its package directory
to each profile, read only, or the helper cannot start:

    [permissions.mcpspec-SERVER.filesystem]
    "/home/me/.npm-global/lib/node_modules/@openai" = "read"

Each mount of the spec is granted at its host path, `read` for ro and `write` for rw, and the
server finds it there (Codex binds nothing elsewhere: a mount whose `to` differs is reported).
Workspace dirs are `{root}/{agent}/codex/DIR` (`{root}/codex/DIR` without per_agent: one fixed
run id, `codex`); create them before the first start. The network is disabled in every profile: Codex's domain rules cannot say a
port, so a spec that allows egress is reported (TG001) rather than widened; waive it to build a
server that reaches nothing.

Only stdio servers that run here get an entry: Codex profiles apply to local commands, so an
HTTP server is refused (TG004), and so is a command written as one shell string. Secrets, CPU,
and approvals have no place in a profile: each one the spec sets is reported (TG001, TG003) as
the matrix says. The entry itself starts the server with a fresh session keyring (one line of
perl: Codex would hand the server the keyring of the session that starts it), under `prlimit`
(memory as address space per process, processes as RLIMIT_NPROC of your user) and `timeout`
(max_lifetime), and with `env -i` (only the spec's variables): limits of a process, weaker than
a cgroup (TG002).
So the host needs /usr/bin/perl, /usr/bin/prlimit, /usr/bin/timeout and /usr/bin/env (perl-base,
util-linux and coreutils on Debian and Ubuntu).

Start Codex as a user other than root. Codex's bubblewrap covers only the parts of /proc its
caller could not write anyway, so a server of a Codex started as root writes every host sysctl
under /proc/sys (kernel.core_pattern is a command the host kernel runs outside every namespace);
a profile entry for /proc/sys is mounted beneath the sandbox's /proc and changes nothing. Start
it, too, with no descriptor open but stdin, stdout and stderr: Codex closes only its low ones, and a
higher one (a directory, a socket) reaches every server, in the sandbox's /proc/1/fd as well.

Python servers on asyncio may hang under any profile: Codex's filter refuses send(2) on every
socket while the network is off, the socketpair asyncio wakes its loop with included, and the `mcp`
SDK's stdio transport wakes it that way from the thread that reads stdin (codex-cli 0.171.0). Node
servers, and servers that do not wake a loop across threads, are not affected.
"""


class CodexProfileTarget:
    name = "codex-profile"
    description = "Codex permission profiles (`codex sandbox --permission-profile`) and the Codex `[mcp_servers]` entries that run each stdio server under its own profile"
    usage = USAGE
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset()

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        gaps: list[Gap] = []
        overrides: Overrides = {}
        egress = egress_plan(sandbox)
        # An allow list with a name asks for egress-allowlist, whose matrix row says it; addresses alone or default allow do not.
        if egress.mode != "none" and all(d.kind == "cidr" for d in egress.allow):
            what = "allows egress by default" if not egress.allow else f"allows {len(egress.allow)} destination(s)"
            gaps.append(Gap("egress-allowlist", "none", sandbox.origin("egress.allow") if egress.allow else sandbox.origin("egress.default"),
                            f"egress allowlist by name: the spec {what}; Codex's domain rules cannot say a port or an address range and bind only through Codex's "
                            "own proxy, so the profile grants no network at all and the server reaches nothing"))
        for grant in sandbox.secrets:
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "provider"),
                            f"secret {grant.name!r}: a Codex profile carries no secret and the entry delivers none; give it to the server yourself"))
        if sandbox.secrets:  # each secret's own gap above names it at its provider (where a waiver of it is written), not the server at large
            overrides["secrets"] = ("full", CAPABILITIES["secrets"].how)
        with contextlib.suppress(Refused):  # server_files refuses it: the finding is that refusal
            gaps += served(sandbox)[1]
        return gaps, overrides

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        _served(sandbox)  # what the config holds for it: its refusals stop this server alone
        return Emitted()

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        if not built:
            return Emitted()
        entries = [_served(sandbox) for sandbox in built]
        return Emitted({CONFIG_FILE: config_text(plan, entries)})


def _served(sandbox: EffectiveSandbox) -> Served:
    """The server's profile and entry; an HTTP server is refused (Codex reaches it by URL, no profile applies)."""
    if isinstance(sandbox.transport, HttpTransport):
        raise Refused("process-policy", (*sandbox.path, "transport"),
                      "codex-profile sandboxes stdio servers only: a Codex profile applies to commands Codex starts, and Codex reaches "
                      "an HTTP server by its URL (run it with another target)")
    return served(sandbox)[0]


def config_text(plan: Plan, entries: Sequence[Served]) -> str:
    """The file to merge into Codex's config.toml: the header, then the profiles and the entries (tomli-w escapes every string)."""
    document = {
        # Codex refuses a config with [permissions] and no default_permissions; read-only is the narrowest for its own commands.
        "default_permissions": ":read-only",
        "permissions": {profile_name(entry.name): entry.profile for entry in entries},
        "mcp_servers": {entry.name: entry.entry for entry in entries},
    }
    lines = [*header(plan, "Codex permission profiles and MCP server entries (merge into ~/.codex/config.toml)"),
             "# Codex needs default_permissions once a config has [permissions]: keep yours instead if you set one (or sandbox_mode)."]
    return "\n".join(lines) + "\n\n" + tomli_w.dumps(document)


TARGET = CodexProfileTarget()
