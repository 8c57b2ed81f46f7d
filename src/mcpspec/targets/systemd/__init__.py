"""The systemd target: one hardened template service per server, an instance per agent run.

A stdio server gets ``mcp-<project>_<server>@.service`` and an ``Accept=yes`` socket
``mcp-<project>_<server>.socket``: every connection to ``/run/mcp-<project>/<server>.sock``
starts one instance with the connection as its stdin and stdout. An HTTP server's
template is started per run and listens in its own network namespace; a socket unit
on the host's 127.0.0.1 hands each connection to a systemd-socket-proxyd that joins
that namespace (``JoinsNamespaceOf=``). Each instance runs as its own
transient user (``DynamicUser=`` with ``User=`` built from the instance) with no
capabilities, the project's syscall filter (``mcpspec.targets.seccomp``), a read-only host, an empty ``/run``, fresh workspace
directories and, unless it may reach the network, no network at all.

A server with an egress allowlist (stdio or HTTP) keeps its private network: the shim (``shim.sh``)
starts socat on 127.0.0.1:3128 inside it, relaying to a unix socket that is bound in
from the host, where a socket-activated systemd-socket-proxyd hands each connection
to a squid that allows only the listed names and ports. The same shim exports
secrets given ``as: {env: ...}`` from ``$CREDENTIALS_DIRECTORY``.

Modules: ``names`` (unit, user and path names), ``gaps`` (what cannot be enforced),
``service`` (the template), ``helpers`` (socket, HTTP forwarder, squid and relay units),
``directive`` (one typed value per setting: its type picks the escaping),
``unitfile`` (rendering), ``unitparse`` and ``reader`` (what built units grant, read
back), ``audit.py`` (the stop-time audit helper, run by the host's python3),
``own_addresses_file.py`` (writes the host's addresses for squid at its start), and the
shell the units run (``shim.sh``, ``squid-log.sh``, ``squid-ready.sh``, ``http-ready.sh``). Every value
taken from the spec reaches a unit through a typed directive; a value its escaping
refuses stops the server's build (TG004).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.egress import egress_plan
from mcpspec.targets.hostprep import merged, systemd_dirs, tmpfiles_name, tmpfiles_text
from mcpspec.targets.systemd.gaps import server_gaps
from mcpspec.targets.systemd.helpers import helper_files
from mcpspec.targets.systemd.names import BadName, names, run_id_room
from mcpspec.targets.systemd.service import PROXY_PORT, SHIM, service

__all__ = ["CAPABILITIES", "PROXY_PORT", "SHIM", "TARGET", "USAGE", "SystemdTarget"]

_REAL = "tests/test_target_systemd_real.py::"

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability("full", "BindPaths=/BindReadOnlyPaths= of host paths; each workspace dir is a RuntimeDirectory= of the instance (created empty, owned by the instance's own transient user, mode 0700, removed at stop) bound at the mount target; a tmpfs dir is a TemporaryFileSystem= of its size; paths under ~ are refused (a system unit has no invoking user)", (_REAL + "test_read_only_host_and_mounts",)),
    "hidden-paths": Capability("partial", "ProtectSystem=strict makes the host read-only; /home, /root, /run/user and /tmp (ProtectHome=, PrivateTmp=), /boot, /media, /mnt, /srv and the data dirs of /var (InaccessiblePaths=) are hidden, devices and kernel interfaces too, and /run is an empty tmpfs holding only the instance's own runtime directory, credentials and egress socket (not with direct egress), and /dev/shm is the instance's own 16 MiB tmpfs; /etc, /usr, /opt and world-readable files elsewhere stay readable"),
    "identity": Capability("full", "DynamicUser=yes with User= built from the instance: a transient uid per run, never root, so concurrent runs of one server cannot read each other's workspaces or /proc/<pid>/environ, nor signal each other (runtime.user and runtime.group are not used); empty CapabilityBoundingSet= and AmbientCapabilities=, NoNewPrivileges=, PrivateUsers=, the project's syscall filter (see the syscall filter row); MemoryDenyWriteExecute=yes unless the command is a JIT runtime (node, npx, java, deno, bun, chromium...), which needs writable executable memory", (_REAL + "test_concurrent_instances_have_their_own_user_and_cannot_reach_each_other", _REAL + "test_dev_shm_is_private_to_each_instance")),
    "env": Capability("full", "only env.set, as Environment= lines, plus the proxy variables, secrets given as.env, what systemd itself sets (PATH, USER, LOGNAME, HOME, SHELL, INVOCATION_ID, JOURNAL_STREAM, SYSTEMD_EXEC_PID, CREDENTIALS_DIRECTORY, RUNTIME_DIRECTORY) and, when the shim starts the server, bash's PWD, SHLVL and _; loader variables (LD_*...) are refused when the root audit command would see them", (_REAL + "test_secrets_reach_only_their_server_and_never_a_command_line_or_the_journal",)),
    "secrets": Capability("full", "LoadCredential= from an absolute file or from the service manager's own credentials (systemd-credential), bound read-only at as.file, or exported as.env by a shim that reads $CREDENTIALS_DIRECTORY and execs the server; values never appear in a unit, argv or the journal; a file source inside a writable mount is refused (the service manager would follow a link planted there); the env, vault and k8s-secret providers are not supported", (_REAL + "test_secrets_reach_only_their_server_and_never_a_command_line_or_the_journal", _REAL + "test_a_sandbox_cannot_plant_a_link_at_a_credential_source",)),
    "egress-deny": Capability("full", "PrivateNetwork=yes for every server, HTTP ones too (only the instance's own loopback, and none of the host's abstract unix sockets: they belong to a network namespace), IPAddressDeny=any, RestrictAddressFamilies=none for a stdio server (its connection arrives as a descriptor) and AF_INET AF_INET6 for an HTTP one (AF_UNIX too where it may listen), and an empty /run, so no unix socket of the host (D-Bus, journald, systemd-resolved) is reachable; an HTTP server's port is forwarded from the host's 127.0.0.1 by a socket unit and a systemd-socket-proxyd joined to the run's namespace (JoinsNamespaceOf=); direct egress (via: direct) shares the host network and gets partial", (_REAL + "test_no_unix_socket_of_the_host_is_reachable_with_egress_denied", _REAL + "test_an_http_server_has_its_own_network_namespace_and_only_its_port_is_forwarded", _REAL + "test_dev_shm_is_private_to_each_instance")),
    "egress-allowlist": Capability("full", "the instance has no network but one unix socket, bound into its otherwise empty /run: its socat relays 127.0.0.1:3128 to a socket-activated systemd-socket-proxyd and a squid that allows only the listed names and ports (its readiness is read from its own log, so another squid on a port that hashes alike never passes for it); squid passes only http:// and https:// URLs and CONNECT: its manager (cache_object://, /squid-internal-mgr/), its internal pages, TRACE and every other scheme are refused; an HTTP server is confined the same way, in its own network namespace", (_REAL + "test_with_an_allowlist_only_the_egress_socket_is_reachable", _REAL + "test_an_http_server_has_its_own_network_namespace_and_only_its_port_is_forwarded", _REAL + "test_a_squid_whose_port_another_project_holds_fails_instead_of_passing_for_it", _REAL + "test_squid_refuses_the_hosts_own_addresses_and_answers_nothing_itself", "tests/test_egress_proxy_attacks.py::test_squid_answers_nothing_itself_and_passes_only_http_and_connect")),
    "metadata-blocking": Capability("full", "squid refuses metadata addresses and the special-purpose ranges of both families (mcpspec.addresses) after name resolution; squid shares the host's network namespace, so the host's own addresses (every local address and local route of both families, read from /proc/net by an ExecStartPre=+ helper at each start of squid into its runtime directory) are refused like loopback, and ahead of address entries when deny holds loopback (@private, @loopback); an address the host gains while squid runs is not, until squid restarts; direct egress gets IPAddressDeny= of the metadata ranges", (_REAL + "test_with_an_allowlist_only_the_egress_socket_is_reachable", _REAL + "test_squid_refuses_the_hosts_own_addresses_and_answers_nothing_itself", "tests/test_egress_proxy_attacks.py::test_the_hosts_own_addresses_are_refused_literal_bracketed_mapped_and_by_name")),
    "listeners": Capability("full", "PrivateNetwork=yes: a listener is reachable only inside the instance's own network namespace (an HTTP server's own port only through its forwarder); SocketBindDeny=any as well, and a stdio server without listeners cannot open a socket at all", (_REAL + "test_with_an_allowlist_only_the_egress_socket_is_reachable", _REAL + "test_an_http_server_has_its_own_network_namespace_and_only_its_port_is_forwarded")),
    "memory": Capability("full", "MemoryMax= (and MemorySwapMax=0) on the instance's cgroup", (_REAL + "test_limits_hold",)),
    "pids": Capability("full", "TasksMax= on the instance's cgroup", (_REAL + "test_limits_hold",)),
    "cpu": Capability("partial", "CPUQuota= of cpus x 100% on the instance's cgroup; no real test measures the throttling"),
    "lifetime": Capability("full", "RuntimeMaxSec=: systemd stops the instance at max_lifetime (SIGTERM, SIGKILL 5 s later)", (_REAL + "test_limits_hold",)),
    "syscall-filter": Capability("full", "the project's syscall policy (mcpspec.targets.seccomp) as SystemCallFilter= by name, no group (so nothing it refuses comes back with one: io_uring, keyrings, userfaultfd, perf, bpf, ptrace and process_vm_*, mounts, modules), minus @privileged and @resources as well; refused calls fail with EPERM, clone3 with ENOSYS (RestrictNamespaces=, so libc falls back to clone); the policy's argument filters are systemd settings: RestrictNamespaces= (clone without namespace flags), LockPersonality= (which refuses the personality query too), RestrictAddressFamilies= within the policy's families (a stdio server without egress or listeners gets none, an HTTP one AF_INET and AF_INET6); ioctl is not filtered by argument, but a unit has no terminal for TIOCSTI (stdin is its socket or /dev/null); SystemCallArchitectures=native, KeyringMode=private; the helper units (squid, relays, the HTTP forwarder) get the same allow-list; the root audit command (ExecStopPost=+) is not filtered", (_REAL + "test_every_unit_refuses_what_the_syscall_policy_refuses", "tests/test_target_systemd.py::test_every_unit_filters_syscalls_by_the_project_policy_with_names_systemd_knows")),
    "idle-timeout": Capability("none", "systemd cannot tell an idle MCP session from a slow one; the client or an orchestrator must stop idle instances"),
    "package-install": Capability("partial", "registries are reachable only if the egress allowlist lists them; registries and lockfile are not checked"),
    "process-policy": Capability("partial", "denied command names are made inaccessible in /usr/local/bin, /usr/local/sbin, /usr/bin, /usr/sbin, /bin and /sbin (InaccessiblePaths=); the allow list, background and per-command limits are not enforced"),
    "workspace-lifecycle": Capability("partial", "each instance gets fresh, empty workspace dirs in memory under /run (not under workspace.root), removed when it stops; artifacts are not copied out"),
    "audit-log": Capability("partial", "one JSON line per instance when it stops (ExecStopPost=+: result, exit status, mounts, egress policy) to the journal or the sink file, appended by a helper that never follows a link and refuses a sink that is not a regular root-owned file with one link (systemd gives that command the unit's binds and tmpfs mounts, so a sink under the server's own mounts, /run or /dev/shm gets none); in the journal it is sent to journald's native socket as SYSLOG_IDENTIFIER=mcpspec-audit, which journald stamps _UID=0 (the documented query asks for both: a server's output has its unit's identifier and its own uid, its empty /run has no journald socket, and where it has one (direct egress) journald stamps the server's uid on what it sends); squid logs each destination; tool calls are not logged", (_REAL + "test_a_server_cannot_forge_an_audit_line_the_documented_query_returns", _REAL + "test_the_audit_sink_refuses_links_fifos_and_foreign_files_a_sandbox_planted")),
    "image": Capability("none", "the server runs from the host's /usr and its mounts, not from the pinned image"),
    "call-policy": Capability("none", "approvals, rate limits and call timeouts act on MCP messages, which a sandbox does not see: `mcpspec run` enforces them, in front of the server's bwrap launcher"),
}

USAGE = f"""\
The build writes, per server that runs here (`<stem>` is `mcp-<project>_<server>`:
`_` cannot appear in a name, so no two projects or servers share a unit):

- `<stem>@.service`: a template; one instance is one agent run;
- `<stem>.socket` (stdio servers): every connection to
  `/run/mcp-<project>/<server>.sock` starts one instance whose stdin and stdout
  are the connection;
- `<stem>_http@.socket` and `<stem>_http@.service` (HTTP servers): the run's port on
  the host's `127.0.0.1`, and the systemd-socket-proxyd that carries each connection
  into the run's own network namespace (`JoinsNamespaceOf=`);
- with an egress allowlist: `<server>.squid.conf` and `<stem>_squid.service`
  (squid on `127.0.0.1:<port>`, port = 20000 + crc32("<project>/<server>") mod 20000,
  written in the unit), `<stem>_egress.socket` and `<stem>_egress.service`
  (systemd-socket-proxyd from the unix socket `/run/mcp-<project>_egress/<server>.sock`
  to squid). An instance starts them when it needs them;
- `<project>.tmpfiles.conf`: the host directories the units need (the audit sink's
  directory, root's and 0700), for `systemd-tmpfiles --create`. Each line only creates what
  is missing and never changes an existing directory.

Requirements: systemd 250 or newer; `python3` for the audit line (`logging.audit`)
and for the squid unit's start (it reads the host's own addresses, which squid then
refuses, into `/run/mcp-<project>_<server>_squid/host-addresses`);
`squid` and `socat` for servers with an egress allowlist. `SocketBindDeny=` needs a
systemd built with the BPF framework; elsewhere it is ignored (a private network
still isolates stdio servers).

Install (as root):

```sh
mcpspec build mcp-sandbox.yaml --target systemd --out build/systemd
install -m 0644 build/systemd/*.service build/systemd/*.socket /etc/systemd/system/
install -d -m 0755 /etc/mcpspec/<project>
install -m 0644 build/systemd/*.squid.conf /etc/mcpspec/<project>/   # servers with egress only
install -m 0644 build/systemd/<project>.tmpfiles.conf /etc/tmpfiles.d/
systemd-tmpfiles --create /etc/tmpfiles.d/<project>.tmpfiles.conf
systemctl daemon-reload
systemctl enable --now mcp-<project>_<server>.socket   # each stdio server
```

Run a stdio server: give the MCP client
`socat STDIO UNIX-CONNECT:/run/mcp-<project>/<server>.sock` as the server's
command. The socket is `0600 root`; to let the agent's user connect, add a
drop-in (`systemctl edit mcp-<project>_<server>.socket`) with `[Socket]` and
`SocketUser=<agent user>`. Closing the connection stops the instance.

Run an HTTP server for one run: `systemctl start mcp-<project>_<server>@<run-id>.service`
(a run id of letters, digits, `_` and `-`, at most {run_id_room()} characters: it is part of
the instance's user name), point the client at `http://127.0.0.1:<port>/`, and
`systemctl stop mcp-<project>_<server>@<run-id>.service` at the end. The server listens
in its own network namespace; `mcp-<project>_<server>_http@<run-id>.socket`, started and
stopped with it, listens on the host's `127.0.0.1:<port>` and starts the forwarder at the
first connection (once the server listens). Instances of one HTTP server share its
port: one run at a time. A server with `egress.via: direct` instead shares the host
network and listens on the host's loopback itself.

Each instance runs as its own transient user, `m<crc32 of project/server>-<instance>`:
a run id or socket instance name (`<connection>-<client pid>-<client uid>`) too long
for a user name makes systemd refuse to start that instance rather than share a user.

While an instance runs, its workspace dirs are
`/run/mcp-<project>/<server>/<instance>/<dir>` on the host (root only); they are
removed when the instance stops, so copy artifacts out before. Read-only
workspace dirs start empty. Mount targets missing on the host are created there
as empty directories or files when an instance starts.

Audit lines go to the journal or to the spec's sink file (a regular file owned by root;
a link or a file with several links there is refused, and the line goes to the journal
with `MCPSPEC_EVENT=sink-refused`). systemd runs the audit command with the unit's bind
and tmpfs mounts, so a sink under one of the server's mount targets, `/run` or `/dev/shm`
would land in the server's mount or vanish: the build says so. In the journal, query them by the fields only the
root audit helper can have:

```sh
journalctl _UID=0 SYSLOG_IDENTIFIER=mcpspec-audit -o cat                 # every audit line
journalctl _UID=0 SYSLOG_IDENTIFIER=mcpspec-audit MCPSPEC_PROJECT=<project> MCPSPEC_SERVER=<server>
journalctl _UID=0 SYSLOG_IDENTIFIER=mcpspec-audit _SYSTEMD_UNIT=mcp-<project>_<server>@<run-id>.service
```

Never read them with `journalctl -u` or by identifier alone: a server's own output is
in its unit's journal too, with `SYSLOG_IDENTIFIER=mcp-<project>_<server>` and its
transient `_UID`, and may print anything, a forged audit line included. `_UID` is set
by journald from the sender's credentials; a sandbox never has uid 0. Squid logs each destination to
`/var/log/mcp-<project>_<server>_squid/access.log`. Squid's loopback port is
reachable by every local user, but only towards the server's allowlist.

The shim that starts a stdio server with an egress allowlist runs `/bin/bash`,
`socat`, `grep` and `sleep` inside the sandbox (and `/bin/bash` for a secret given
`as: {{env: ...}}`), so a `process.deny` entry for them is not applied; on a host
where `/bin/sh` is bash, denying `sh` also hides bash and the server does not start.
"""


class SystemdTarget:
    name = "systemd"
    description = "hardened systemd template units (stdio through socket activation, or HTTP on loopback), with a squid egress proxy"
    usage = USAGE
    capabilities = CAPABILITIES
    options: frozenset[str] = frozenset()

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        return server_gaps(plan, sandbox)

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        try:
            server = names(plan.project, sandbox.name)
        except BadName as exc:
            raise Refused("identity", sandbox.path, str(exc)) from None
        egress = egress_plan(sandbox)
        return Emitted({server.service: service(plan, sandbox, server, egress), **helper_files(plan, sandbox, server, egress)})

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        if not built:
            return Emitted()
        dirs = merged(item for sandbox in built for item in systemd_dirs(plan, sandbox))
        return Emitted({tmpfiles_name(plan): tmpfiles_text(plan, dirs, "systemd")})


TARGET = SystemdTarget()
