"""The bubblewrap target: one launcher script per server, usable directly as an
MCP client's stdio command, plus a squid allowlist for servers with egress.

The launcher is a Python program: a generated head (a comment header and a
``CONFIG`` literal of every value the spec sets) followed by the constant runtime
(``runtime.py``) that prepares the workspace, builds the bwrap command line,
starts and stops the egress proxy, enforces limits and writes the audit line.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from importlib import resources

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan, SecretGrant

# What env.inherit: minimal passes (docs/spec.md documents it from the same constant).
from mcpspec.spec.models import MINIMAL_ENV as MINIMAL_ENV
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.bwrap.runtime import Config, Mount, Secret
from mcpspec.targets.common import embedded_source, header, header_text
from mcpspec.targets.egress import EgressPlan, egress_plan, squid_config
from mcpspec.targets.escape import Unrepresentable
from mcpspec.targets.hostprep import bwrap_dirs, merged, tmpfiles_name, tmpfiles_text
from mcpspec.targets.seccomp import SyscallPolicy, bpf_program, syscall_policy
from mcpspec.targets.seccomp.tables import ARCHES, SYSCALLS

USAGE = """
## Running the output

Each server gets `<server>.py`, a launcher to use as the server's stdio command in the
MCP client's config, for example `{"command": "/opt/mcp/build/bwrap/repo.py",
"env": {"MCPSPEC_AGENT": "coder"}}`. A server with an egress allowlist also gets
`<server>.squid.conf`, which its launcher reads from the same directory.

The launcher is a Python program (`/usr/bin/python3 -IS`, standard library only, Python
3.10 or newer): a generated `CONFIG` literal, then a constant runtime that every launcher
shares. The host needs bubblewrap 0.8 or newer with user namespaces enabled and, for
allowlisted egress, socat and squid (Debian: `apt-get install python3 bubblewrap socat squid`).

What the launcher reads from its environment:

| variable | meaning |
|---|---|
| `MCPSPEC_AGENT` | the agent this run serves (default: the server's only agent) |
| `MCPSPEC_RUN_ID` | the run id, `[A-Za-z0-9][A-Za-z0-9._-]{0,63}` (default: a UTC timestamp and the pid) |
| the secrets' `env` refs, `HOME`, `CREDENTIALS_DIRECTORY` | where secrets and `~/` mounts are read at launch |
| `MCPSPEC_EGRESS_HOSTS_FILE` | a hosts file for the proxy's name resolution (pinning; default /etc/hosts) |
| `MCPSPEC_CGROUP` | `required` (default), `optional` or `off`: whether the limits need a cgroup (below) |

### Preparing the host

The build also writes `<project>.tmpfiles.conf`, a systemd-tmpfiles.d file with the directories
the launchers check before they start anything: each file audit sink's directory (root's, 0700:
the launcher appends only in a directory no one else may change) and the workspace root (root's,
0711, as the launcher would make it). Apply it once per host, as root, by its absolute path
(`systemd-tmpfiles --create "$PWD/build/bwrap/<project>.tmpfiles.conf"`; a bare name is looked up
in `/etc/tmpfiles.d/`, where installing it also applies it at every boot; `--root=DIR` applies it
under `DIR` instead, to see what it makes). Each line only creates
what is missing (`:` before the mode and owners): an existing directory keeps its mode and owner,
so the file never widens one; a wrong one is named by the launcher. A path under `~/` is left
out (it depends on the user who runs the launcher), and so is a path tmpfiles.d cannot carry as
written (anything but letters, digits and `/._+,:=@%-`; `%` is written `%%`): a comment in the
file names it, with the owner and mode to make it with by hand.

Before it creates anything, the launcher checks every prerequisite of the host (its tools, the
proxy user, the audit directory and sink, the workspace root, the secrets and the host mount
sources) and refuses (status 125) with one line naming all that are missing or wrong, and the
`systemd-tmpfiles --create` command for its build's file when that file makes a missing
directory. `mcpspec verify` runs the same check for every server before it runs any.

Started as root, the launcher runs bwrap as the spec's `runtime.user` and group (uid or gid 0
becomes 65532 on the host, so root inside the sandbox is never root outside), with an empty
capability bounding set; the workspace directories root makes for a run are root-owned down to
the run directory, and only the declared dirs belong to the sandbox's uid. Every path root opens
(the audit sink, file secrets, the workspace) is walked without following a symbolic link that
anyone but root planted. Started by another user, the sandbox runs as that user.

Inside, the server is the sandbox's pid 1 and sees `/usr` (read-only, with the `/bin` and `/lib`
links), the dynamic-linker, TLS and timezone files of `/etc`, a generated `/etc/passwd`,
`/proc`, a minimal `/dev`, a 64 MiB `/tmp`, a 16 MiB `/dev/shm` and the spec's mounts on a
read-only root: nothing else of the host. Every process inside runs under the project's syscall
filter (`docs/seccomp.md`; x86_64 and aarch64 only), and the launcher leaves the session keyring it
was started with for a fresh, empty one before it starts anything. No descriptor of the launcher's reaches it, and no
value of the spec appears on a command line (bwrap reads its arguments from a memfd).

### Limits and the sandbox's cgroup

`runtime.memory`, `runtime.pids` and `runtime.cpus` are held by a cgroup the launcher makes for
each launch (`mcpspec-<server>-<16 hex digits>`; the spec names nothing else of it) and removes
when the launch ends, after killing anything left in it; the guardian removes it if the launcher
is killed. bwrap joins it before it runs anything of the sandbox's, so every process of the
sandbox is in it, and the sandbox cannot leave it: it has no `/sys`, no capability, its own cgroup
namespace, and the files are root's. Where it is made:

- cgroup v2: below the launcher's own cgroup (read from `/proc/self/cgroup`) when the launcher
  may enable the `memory`, `pids` and `cpu` controllers in its `cgroup.subtree_control` (the root
  of a cgroup namespace, or a delegated subtree); when that cgroup holds processes, so cannot,
  beside it, in its parent, when the launcher may write there (root, or a subtree delegated to
  its user, as systemd's `user@.service` is). The leaf gets `memory.max`, `memory.swap.max` 0,
  `pids.max` and `cpu.max` (cpus x 100 ms per 100 ms).
- A hybrid host (cgroup v1 hierarchies, a v2 `unified` mount without the memory controller):
  run as root, the launcher makes the leaf below its own cgroup in each of the v1 `memory`, `pids`
  and `cpu` hierarchies: `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes` (swap counted;
  without swap accounting, `memory.swappiness` 0), `pids.max`, `cpu.cfs_quota_us`.

A client run by systemd should run with `Delegate=yes` in its unit: cgroups below a unit that
does not delegate are systemd's, and systemd may move processes back into the unit's own cgroup
(cgroup v1, on a reload), taking the sandbox out of its limits.

Only the v1 path (a hybrid host, as root) runs in this project's tests, on the machines it is
developed on; the v2 path follows the kernel's cgroup v2 interface but no test here runs it.

The memory limit counts every page the sandbox charges: anonymous memory, memfd, shared memory
and tmpfs; at the limit the kernel's OOM killer ends the process (the launcher exits 137 when it
was the server). bwrap itself counts as one of `runtime.pids`. RLIMIT_AS (memory) and, with
`max_lifetime`, a budget of cpus x max_lifetime CPU-seconds stay as well.

When no cgroup can be had (a launcher that is not root and has no delegated subtree, or a host
whose cgroups lack a controller) the launcher refuses to start a server that sets any of these
limits (exit 125, naming what it tried). `MCPSPEC_CGROUP=optional` (a cgroup when one can be had)
or `off` (never) accepts the rlimits instead, and the launcher then says on stderr, once per
launch, that RLIMIT_AS does not count memfd or shared memory: the memory limit is then an
address-space limit that a server can pass with memfd or shared memory, processes are bounded
by RLIMIT_NPROC of the whole uid, and CPU only by the budget (none without max_lifetime).

The launcher exits with the server's status, 128 + N when signal N stopped the session, or 125
when it refuses to start (the host not prepared, a tool missing, an unknown agent, a bad run id, a planted link, a
secret it cannot read, a proxy that did not start) with a message on stderr. Killed outright,
it takes the sandbox, squid and socat with it: each has a parent-death signal, and a guardian
process of its own session kills the sandbox's pid 1 and removes the proxy's state. On exit it stops
the proxy and writes one JSON audit line to the spec's sink:

```json
{"event":"launch","project":"acme","server":"repo","agent":"coder","run_id":"r1","started":"...","ended":"...",
 "exit_status":0,"ended_by":"exit","error":null,"run_dir":"/srv/mcp/workspaces/coder/r1","mounts":[...],"egress":{...},
 "egress_log":[{"result":"allowed","method":"CONNECT","host":"pypi.mirror.acme.example","port":443,"status":200,"scheme":null,"requests":3}],
 "egress_log_omitted":{"allowed":0,"refused":0},"cgroup":"v2"}
```

`egress_log` has one entry per distinct destination and answer, with its number of requests: at
most 1,000 allowed and 1,000 refused ones; `egress_log_omitted` counts the requests past those
(a sandbox can make its proxy log as long as it likes, and the audit still accounts for all of it).

`ended_by` is `exit`, `signal`, `max_lifetime`, `idle_timeout`, `cpu_budget` or `refused`;
`cgroup` is `v1` or `v2` when a cgroup held the limits, null when none did (rlimits alone, or no
limit asked for). In `egress_log`, `scheme` is the request URL's (`http`, `https`, or what was
refused, such as `cache_object` or `ftp`); a `CONNECT` has none.
"""

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

_REAL = "tests/test_target_bwrap_real.py::"
_ATTACKS = "tests/test_target_bwrap_attacks.py::"
_PROXY = "tests/test_egress_proxy_attacks.py::"
_CGROUP = "tests/test_target_bwrap_cgroup.py::"
_REDTEAM = "tests/test_redteam_session29.py::"
_SECCOMP = "tests/test_seccomp_bwrap.py::"

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability(
        "full",
        "bwrap --bind/--ro-bind of each mount, resolved as the sandbox's own uid; workspace dirs under {root}/{agent}/{run_id}, "
        "root-owned down to the run dir and made through descriptors that follow no link; a tmpfs dir of mode ro is read-only",
        (_REAL + "test_every_boundary_holds_for_a_server_with_an_egress_allowlist", _REAL + "test_a_workspace_dir_planted_as_a_symlink_is_refused",
         _ATTACKS + "test_a_workspace_root_the_server_can_write_gives_it_nothing_to_race", _ATTACKS + "test_the_root_and_every_tmpfs_are_bounded_and_read_only_means_read_only"),
    ),
    "hidden-paths": Capability(
        "full",
        "the sandbox root is bwrap's own read-only tmpfs: only /usr, the dynamic-linker files, CA certificates and timezone of /etc, and the declared "
        "mounts exist; no host descriptor, environment or command line reaches it (/proc/self/mountinfo does name the host paths of the declared mounts)",
        (_REAL + "test_every_boundary_holds_for_a_server_with_an_egress_allowlist",
         _ATTACKS + "test_nothing_of_the_host_reaches_the_server_through_descriptors_environ_or_cmdlines"),
    ),
    "identity": Capability(
        "full",
        "--unshare-user --uid/--gid, --cap-drop ALL, --disable-userns; a root launcher runs bwrap as the spec's uid and gid "
        "(uid or gid 0 becomes 65532 on the host), with an empty bounding set",
        (_REAL + "test_every_boundary_holds_for_a_server_with_an_egress_allowlist", _ATTACKS + "test_uid_0_in_the_spec_is_an_unprivileged_uid_on_the_host"),
    ),
    "env": Capability(
        "full",
        "--clearenv, then only the declared variables (plus PATH, and the proxy variables when egress goes through the proxy); "
        "bwrap, squid and socat run with PATH alone",
        (_REAL + "test_every_boundary_holds_for_a_server_with_an_egress_allowlist",
         _ATTACKS + "test_nothing_of_the_host_reaches_the_server_through_descriptors_environ_or_cmdlines"),
    ),
    "secrets": Capability(
        "full",
        "read at launch from env, file or a systemd credential (a regular file with one link, reached without following a link the "
        "sandbox could plant) and handed in through a memfd (--ro-bind-data, or a variable set by a shim); never an argument; "
        "vault and k8s-secret are not supported",
        (_REAL + "test_every_boundary_holds_for_a_server_with_an_egress_allowlist", _ATTACKS + "test_links_planted_in_writable_mounts_lead_root_nowhere",
         _ATTACKS + "test_nothing_of_the_host_reaches_the_server_through_descriptors_environ_or_cmdlines"),
    ),
    "egress-deny": Capability("full", "--unshare-net: the sandbox has only its own loopback", (_REAL + "test_denied_egress_reaches_nothing_and_gets_no_proxy",)),
    "egress-allowlist": Capability(
        "full",
        "no network but a unix socket bridged by socat to a per-launch squid that allows only the listed names and ports; the socket's "
        "host path is removed once the sandbox has it mounted; squid passes only http:// and https:// URLs and CONNECT: its manager "
        "(cache_object://, /squid-internal-mgr/), its internal pages, TRACE and every other scheme are refused before any other rule, "
        "and recorded as refused",
        (_REAL + "test_every_boundary_holds_for_a_server_with_an_egress_allowlist", _REAL + "test_a_listed_name_is_allowed_by_name_and_its_address_alone_is_not",
         _ATTACKS + "test_no_other_sandbox_can_reach_the_egress_socket", _PROXY + "test_bwrap_launcher_refuses_squid_itself_and_the_hosts_own_addresses",
         _PROXY + "test_squid_answers_nothing_itself_and_passes_only_http_and_connect", _PROXY + "test_connect_to_a_port_the_allowlist_does_not_name_is_refused"),
    ),
    "metadata-blocking": Capability(
        "full",
        "squid refuses metadata addresses and the special-purpose ranges of both families (mcpspec.addresses) after name resolution, "
        "for literals, bracketed IPv6 and names alike; squid shares the host's network namespace, so the host's own addresses "
        "(every local address and local route of both families, read from /proc/net at each launch) are refused like loopback, "
        "and ahead of address entries when deny holds loopback (@private, @loopback); an address the host gains while a session runs is not",
        (_REAL + "test_every_boundary_holds_for_a_server_with_an_egress_allowlist",
         _PROXY + "test_the_hosts_own_addresses_are_refused_literal_bracketed_mapped_and_by_name",
         _PROXY + "test_bwrap_launcher_refuses_squid_itself_and_the_hosts_own_addresses",
         _PROXY + "test_the_reader_finds_every_address_and_local_range_of_the_namespace",
         "tests/test_egress_special_ranges.py::test_squid_refuses_every_sample_literal_bracketed_and_by_name",
         "tests/test_egress_special_ranges.py::test_a_name_with_a_refused_address_among_its_addresses_is_refused",
         _ATTACKS + "test_the_unspecified_and_mapped_forms_of_loopback_do_not_reach_a_host_service"),
    ),
    "listeners": Capability(
        "full",
        "a listener inside the sandbox's own network namespace is unreachable from the host",
        (_ATTACKS + "test_a_listener_inside_the_sandbox_is_unreachable_from_the_host",),
    ),
    "memory": Capability(
        "full",
        "a cgroup per launch holds every page the sandbox charges, memfd, shared memory and tmpfs included, with no swap (cgroup v2 "
        "memory.max and memory.swap.max 0; on a hybrid host the v1 memory hierarchy, memory.limit_in_bytes and memsw, the path the "
        "tests run): the OOM "
        "killer ends it at the limit; RLIMIT_AS as well, and /tmp 64 MiB, /dev/shm 16 MiB, each tmpfs dir at its size. The launcher "
        "refuses to start when it can make no cgroup (not root, no delegated v2 subtree), unless the client sets MCPSPEC_CGROUP=optional "
        "or off: then RLIMIT_AS alone, which does not count memfd or shared memory, and the launcher says so on stderr",
        (_CGROUP + "test_memfd_pages_count_against_the_memory_limit", _CGROUP + "test_system_v_shared_memory_counts_against_the_memory_limit",
         _CGROUP + "test_without_a_cgroup_the_launcher_refuses_unless_told_rlimits_will_do",
         _ATTACKS + "test_the_root_and_every_tmpfs_are_bounded_and_read_only_means_read_only"),
    ),
    "pids": Capability(
        "full",
        "the cgroup's pids.max, the sandbox's own (bwrap counts as one); without a cgroup (MCPSPEC_CGROUP=optional or off), "
        "RLIMIT_NPROC of the sandbox's host uid, shared by every process of that uid; the egress bridge, a host process outside "
        "the cgroup that forks one per connection, relays at most pids (at most 128) connections at once",
        (_CGROUP + "test_a_fork_bomb_stops_at_the_sandboxs_own_pids_limit", _CGROUP + "test_without_a_cgroup_the_launcher_refuses_unless_told_rlimits_will_do",
         _REDTEAM + "test_connections_to_the_egress_bridge_cost_no_more_host_processes_than_the_pids_limit"),
    ),
    "cpu": Capability(
        "full",
        "the cgroup's CPU rate for every process of the sandbox (cpu.max, or cpu.cfs_quota_us on a hybrid host; at least 1 ms per "
        "100 ms); with max_lifetime also a budget of cpus x max_lifetime CPU-seconds over its processes and RLIMIT_CPU per process, "
        "which are all that hold without a cgroup (MCPSPEC_CGROUP=optional or off; children reaped unwaited escape the budget)",
        (_CGROUP + "test_cpus_is_a_rate_for_every_process_of_the_sandbox", _ATTACKS + "test_the_cpu_budget_counts_every_process_of_the_sandbox"),
    ),
    "lifetime": Capability(
        "full",
        "the launcher stops the sandbox at max_lifetime (SIGTERM, SIGKILL 5 s later); the server is the sandbox's pid 1, so every "
        "process it left goes with it, and killing the launcher at any moment ends them all (its guardian removes the sandbox's cgroup)",
        (_REAL + "test_max_lifetime_stops_the_server_and_killing_the_launcher_leaves_nothing", _ATTACKS + "test_after_max_lifetime_nothing_holds_the_client_output",
         _ATTACKS + "test_sigkill_of_the_launcher_at_any_moment_of_the_start_leaves_nothing_running",
         _ATTACKS + "test_a_launcher_killed_before_bwrap_reports_its_child_leaves_nothing", _CGROUP + "test_a_killed_launcher_leaves_no_cgroup_behind"),
    ),
    "syscall-filter": Capability(
        "full",
        "bwrap --seccomp: the project's allow-list (docs/seccomp.md), built as classic BPF for x86_64 and aarch64 at build time (another "
        "architecture is refused); refused calls fail with EPERM, clone3 with ENOSYS; socket families as the egress needs (AF_UNIX, and "
        "AF_INET and AF_INET6 with any egress or process.listeners); the launcher first leaves its session keyring for a fresh one, so no key of the login "
        "session is possessed inside",
        (_SECCOMP + "test_a_server_without_egress_gets_every_dangerous_syscall_refused_and_only_unix_sockets",
         _SECCOMP + "test_a_server_with_an_egress_allowlist_gets_inet_sockets_and_nothing_more",
         _SECCOMP + "test_a_key_in_the_launchers_session_keyring_is_out_of_the_sandboxs_reach",
         "tests/test_seccomp_policy.py::test_the_kernel_answers_a_sample_as_the_interpreter_does"),
    ),
    "idle-timeout": Capability(
        "full",
        "the launcher relays the stdio and ends the session after idle_timeout with no byte either way and no request of the client's "
        "awaiting its answer (a long tool call is not idle; a cancelled one no longer counts; one the server never answers holds "
        "the session until max_lifetime)",
        (_REAL + "test_an_idle_session_ends_after_idle_timeout", _ATTACKS + "test_idle_timeout_spares_a_call_in_progress_and_ends_an_idle_session",
         _ATTACKS + "test_a_cancelled_request_leaves_the_session_idle"),
    ),
    "package-install": Capability("partial", "registries are reachable only if the egress allowlist lists them; registries and lockfile are not checked"),
    "process-policy": Capability(
        "partial", "denied commands (names in the PATH directories, or absolute paths) are hidden; the allow list, background and per-command limits are not enforced"
    ),
    "workspace-lifecycle": Capability("partial", "each run id gets a fresh workspace; teardown does not remove it or copy artifacts out"),
    "audit-log": Capability(
        "partial",
        "one JSON line per launch, refused launches included, with the proxy's record of each destination (at most 1,000 distinct "
        "allowed and 1,000 refused ones, the requests past them counted), appended to a sink opened without following links; the "
        "launcher reads the proxy's log every second while the sandbox runs and frees what it has read, so a flood of requests holds "
        "no more than a second of log on the host; tool calls are not logged",
        (_REDTEAM + "test_a_flood_of_refused_requests_does_not_erase_the_allowed_ones_from_the_audit",
         _REDTEAM + "test_the_proxys_log_holds_no_more_than_seconds_of_a_flood_on_the_host"),
    ),
    "image": Capability("none", "the server runs from the host's /usr and its mounts, not from the pinned image"),
    "call-policy": Capability("none", "approvals, rate limits and call timeouts act on MCP messages, which a sandbox does not see: `mcpspec run` enforces them, relaying MCP to the server's launcher"),
}


class BwrapTarget:
    name = "bwrap"
    description = "bubblewrap launcher scripts (stdio), with a squid egress proxy"
    usage = USAGE
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset()

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        return _server_gaps(sandbox)

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        egress = egress_plan(sandbox)
        launcher = f"{sandbox.name}.py"
        emitted = Emitted({launcher: _launcher(plan, sandbox, egress, _runtime_text())}, {launcher})
        if egress.mode == "proxy":
            text = header_text(plan, f"egress allowlist of server {sandbox.name}; the launcher adds the port and file lines and the ACL of the host's own addresses")
            emitted.files[f"{sandbox.name}.squid.conf"] = squid_config(egress, text, [], host_addresses=True)
        return emitted

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        if not built:
            return Emitted()
        dirs = merged(item for sandbox in built for item in bwrap_dirs(plan, sandbox))
        return Emitted({tmpfiles_name(plan): tmpfiles_text(plan, dirs, "bwrap")})


@functools.cache
def _runtime_text() -> str:
    """The launcher's constant part: the runtime, with the reader of the host's own addresses ahead of its start."""
    runtime = resources.files(__package__).joinpath("runtime.py").read_text(encoding="utf-8")
    body, start, call = runtime.rpartition('\n\nif __name__ == "__main__":\n')
    if not start:
        raise AssertionError("runtime.py ends without its start")
    reader = "# ---- the host's own addresses (mcpspec.targets.own_addresses, without its docstring) ----\n" + embedded_source("mcpspec.targets", "own_addresses.py")
    return body + "\n\n" + reader + start + call


def _server_gaps(sandbox: EffectiveSandbox) -> tuple[list[Gap], Overrides]:
    """What this server asks for that bwrap cannot give it, beyond the matrix."""
    gaps: list[Gap] = []
    overrides: Overrides = {}
    if sandbox.transport.type != "stdio":
        gaps.append(Gap("listeners", "none", (*sandbox.path, "transport", "type"),
                        f"{sandbox.transport.type} transport: the bwrap target launches stdio servers; an HTTP server needs a listener on the host network, and sharing it gives up egress control (use the systemd target)"))
    for grant in sandbox.secrets:
        if grant.provider in ("vault", "k8s-secret"):
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "provider"),
                            f"secret {grant.name!r}: the bwrap launcher reads env, file and systemd-credential secrets, not {grant.provider}"))
    egress = egress_plan(sandbox)
    if egress.mode == "direct-open":
        detail = "the sandbox would share the host network, where bwrap filters nothing; set egress.via: proxy"
        overrides["egress-deny"] = ("none", detail)
        overrides["metadata-blocking"] = ("none", detail)
        if any(d.kind != "cidr" for d in egress.allow):
            overrides["egress-allowlist"] = ("none", detail)
        if not sandbox.process.listeners:
            overrides["listeners"] = ("none", "the host network is shared, so a listener is reachable from the host")
    if sandbox.identity.uid == 0:
        overrides["identity"] = ("partial", "runtime.user is 0: the sandbox runs as root inside its user namespace (capabilities are still dropped)")
    return gaps, overrides


def _launcher(plan: Plan, sandbox: EffectiveSandbox, egress: EgressPlan, runtime_text: str) -> str:
    """The launcher: a shebang, a comment header, CONFIG as a Python literal, then the constant runtime."""
    if sandbox.command_is_shell:
        raise Refused("process-policy", (*sandbox.path, "command"), "a command given as one string is run by a shell; give it as a list of words")
    if not sandbox.command:
        raise Refused("process-policy", sandbox.path, f"server {sandbox.name!r} has no command to launch")
    config = _config(plan, sandbox, egress)
    lines = [
        "#!/usr/bin/python3 -IS",
        # Pinned on line 2, where Python looks for it: a spec file name in the header below
        # (such as "coding:shift_jis.yaml") would otherwise choose how Python reads the file.
        "# -*- coding: utf-8 -*-",
        *header(plan, f"the sandbox of MCP server {sandbox.name}"),
        "# Use this file as the server's stdio command. MCPSPEC_AGENT picks the agent,",
        "# MCPSPEC_RUN_ID the run (default: a timestamp); the workspace is per agent run.",
        "",
        "# A signal from the first moment on is recorded, so the launcher always ends in order.",
        "import _signal  # built in: no module search before the handlers are in place",
        "EARLY_SIGNALS: list[int] = []",
        "for _signum in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):",
        "    _signal.signal(_signum, lambda signum, _frame: EARLY_SIGNALS.append(signum))",
        "# Python's own start-up raises a SIGINT as KeyboardInterrupt; its check of argv[0] prints that",
        "# and runs the file anyway, leaving the exception in sys.last_value: the signal counts all the same.",
        "if isinstance(getattr(__import__('sys'), 'last_value', None), KeyboardInterrupt):",
        "    EARLY_SIGNALS.append(_signal.SIGINT)",
        "",
        "CONFIG = {",
        *(f"    {key!r}: {value!a}," for key, value in config.items()),  # ASCII only: no byte of it depends on an encoding
        "}",
        "",
    ]
    return "\n".join(lines) + "\n" + runtime_text


def _config(plan: Plan, sandbox: EffectiveSandbox, egress: EgressPlan) -> dict[str, object]:
    """Every value the runtime reads, as plain data (``repr`` of it is a safe Python literal)."""
    runtime = sandbox.resources
    workspace = plan.workspace
    agents = list(sandbox.agents)
    lifetime = sandbox.lifecycle.max_lifetime
    cpu_seconds = math.ceil(runtime.cpus * lifetime) if runtime.cpus is not None and lifetime is not None else 0
    idle = sandbox.lifecycle.idle_timeout
    env = sandbox.env
    env_mode = env.inherit if isinstance(env.inherit, str) else "list"
    inherit = list(env.inherit) if isinstance(env.inherit, tuple) else list(MINIMAL_ENV) if env.inherit == "minimal" else []
    declared = dict(env.set)
    if "PATH" not in declared and env.inherit != "all" and "PATH" not in inherit:
        declared["PATH"] = DEFAULT_PATH
    config = Config(
        project=plan.project,
        server=sandbox.name,
        agents=agents,
        default_agent=agents[0] if len(agents) == 1 else ("default" if not agents else ""),
        uid=sandbox.identity.uid,
        gid=sandbox.identity.gid,
        workspace_root=workspace.root if workspace is not None else "",
        per_agent=workspace is None or workspace.per_agent,
        env_mode=env_mode,
        inherit=inherit,
        setenv=[[name, value] for name, value in sorted(declared.items())],
        share_net=egress.mode == "direct-open",
        proxy=egress.mode == "proxy",
        memory_bytes=runtime.memory or 0,
        pids=runtime.pids or 0,
        cpu_seconds=cpu_seconds,
        lifetime_seconds=math.ceil(lifetime) if lifetime is not None else 0,
        idle_seconds=math.ceil(idle) if idle is not None else 0,
        audit=sandbox.logging.audit,
        audit_sink=str(sandbox.logging.sink),
        audit_mounts=_audit_mounts(sandbox),
        audit_egress=_audit_egress(egress),
        command=list(sandbox.command),
        workdir=sandbox.workdir,
        seccomp=_seccomp_programs(sandbox),
        keyctl={arch: SYSCALLS[arch]["keyctl"] for arch in ARCHES},
        mounts=[_mount(mount) for mount in sorted(sandbox.mounts, key=lambda m: (m.target.count("/"), m.target))],
        secrets=[secret for grant in sandbox.secrets if (secret := launcher_secret(grant)) is not None],
        masks=[command for command in sandbox.process.deny if "/" not in command or command.startswith("/")],
        cpu_millis=math.ceil(runtime.cpus * 1000) if runtime.cpus is not None else 0,
        host_prep=tmpfiles_name(plan),
    )
    data = {**vars(config), "mounts": [vars(m) for m in config.mounts], "secrets": [vars(g) for g in config.secrets]}
    if any("\x00" in text for text in _strings(data)):  # bwrap reads its arguments NUL-separated
        raise Unrepresentable("a NUL byte cannot reach a command line, a path or an environment variable")
    return data


def _seccomp_programs(sandbox: EffectiveSandbox) -> dict[str, str]:
    """The server's syscall filter for each architecture; the launcher picks its machine's."""
    return dict(_programs(syscall_policy(sandbox)))


@functools.cache
def _programs(policy: SyscallPolicy) -> dict[str, str]:
    return {arch: bpf_program(policy, arch).hex() for arch in ARCHES}


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _mount(mount: EffectiveMount) -> Mount:
    if mount.kind == "tmpfs":
        return Mount("scratch", mount.mode, "", mount.target, mount.size)
    return Mount(mount.kind, mount.mode, mount.source, mount.target)


def launcher_secret(grant: SecretGrant) -> Secret | None:
    """How the launcher reads ``grant`` (None: a provider the bwrap target does not read), from bwrap's source."""
    grant = grant.for_target("bwrap")
    provider, ref = grant.provider, grant.ref
    if provider in ("vault", "k8s-secret"):
        return None
    if provider == "systemd-credential":
        provider = "credential"
    elif grant.source is not None:
        provider, ref = ("home" if grant.source.in_home else "file"), grant.source.path
    return Secret(grant.name, provider, ref, grant.env, grant.file)


def _audit_mounts(sandbox: EffectiveSandbox) -> list[dict[str, str]]:
    out = []
    for mount in sandbox.mounts:
        source = f"{{run_dir}}/{mount.workspace_dir}" if mount.workspace_dir is not None else mount.location
        out.append({"from": "tmpfs" if mount.tmpfs else source, "to": mount.target, "mode": mount.mode})
    return out


def _audit_egress(egress: EgressPlan) -> dict[str, object]:
    return {"mode": egress.mode, "default": egress.default, "allow": [d.text for d in egress.allow], "deny": [d.text for d in egress.deny]}


TARGET = BwrapTarget()
