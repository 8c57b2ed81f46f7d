"""The systemd target: one hardened template service per server, an instance per agent run.

A stdio server gets ``mcp-<server>@.service`` and an ``Accept=yes`` socket
``mcp-<server>.socket``: every connection to ``/run/mcp-<project>/<server>.sock``
starts one instance with the connection as its stdin and stdout. An HTTP server's
template is started per run (``systemctl start mcp-<server>@<run>.service``) and
listens on loopback. Each instance runs as a transient user (``DynamicUser=``)
with no capabilities, a seccomp filter, a read-only host, fresh workspace
directories and, unless it may reach the network, no network at all.

A server with an egress allowlist keeps its private network: a constant bash
shim starts socat on 127.0.0.1:3128 inside it, relaying to a unix socket that
is bound in from the host, where a socket-activated systemd-socket-proxyd hands
each connection to a squid that allows only the listed names and ports.

Every value taken from the spec goes through the escaping helpers of
``mcpspec.targets.escape`` (or is an int or a validated name); a value they
refuse stops the server's build (TG004).
"""

from __future__ import annotations

import ipaddress
import math
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.base import BuildOutput, Capability, Gap, Level
from mcpspec.targets.common import Overrides, compact_json, header, matrix_gaps
from mcpspec.targets.egress import METADATA_RANGES, PRIVATE_RANGES, EgressPlan, egress_plan, squid_config
from mcpspec.targets.escape import Unrepresentable, unit_arg, unit_env, unit_path, unit_text

# Runtimes that compile code at run time and so need writable executable memory:
# their servers run without MemoryDenyWriteExecute=yes.
JIT_RUNTIMES = frozenset({
    "bun", "bunx", "chrome", "chromium", "deno", "dotnet", "electron", "google-chrome", "java", "jshell",
    "luajit", "node", "nodejs", "npm", "npx", "pnpm", "pypy", "pypy3", "yarn",
})
PROXY_PORT = 3128  # where the server's socat listens, inside the server's own network namespace
SQUID_PORT_BASE = 20000
SQUID_PORT_SPAN = 20000
DEFAULT_SCRATCH = 268435456  # a tmpfs workspace dir without a size: 256 MiB, as the bwrap target
SOCKET_PROXYD = "/usr/lib/systemd/systemd-socket-proxyd"
SQUID = "/usr/sbin/squid"
# Host directories hidden from every server (unless a mount, the command or the
# workdir lies in one): data of other services and removable media.
HIDDEN_DIRS = ("/boot", "/media", "/mnt", "/srv", "/var/backups", "/var/cache", "/var/lib", "/var/log", "/var/mail", "/var/spool")
# Where a denied command name is made inaccessible.
COMMAND_DIRS = ("/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin")
# What the egress shim itself runs inside the sandbox: never masked.
SHIM_TOOLS = frozenset({"bash", "socat", "grep", "sleep"})
_CREDENTIAL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
_EXEC_PREFIXES = "-@:+!|"

CAPABILITIES: dict[str, Capability] = {
    "mounts": Capability("full", "BindPaths=/BindReadOnlyPaths= of host paths; each workspace dir is a RuntimeDirectory= of the instance (created empty, owned by its transient user, removed at stop) bound at the mount target; a tmpfs dir is a TemporaryFileSystem= of its size; paths under ~ are refused (a system unit has no invoking user)"),
    "hidden-paths": Capability("partial", "ProtectSystem=strict makes the host read-only; /home, /root, /run/user and /tmp (ProtectHome=, PrivateTmp=), /boot, /media, /mnt, /srv and the data dirs of /var (InaccessiblePaths=) are hidden, devices and kernel interfaces too; /etc, /usr, /opt, /run (world-accessible sockets included) and world-readable files elsewhere stay readable"),
    "identity": Capability("full", "DynamicUser=yes: a transient uid per server, never root (runtime.user and runtime.group are not used); empty CapabilityBoundingSet= and AmbientCapabilities=, NoNewPrivileges=, PrivateUsers=, a @system-service seccomp filter without @privileged and @resources; MemoryDenyWriteExecute=yes unless the command is a JIT runtime (node, npx, java, deno, bun, chromium...), which needs writable executable memory"),
    "env": Capability("full", "only env.set, as Environment= lines (plus the proxy variables and what systemd itself sets: PATH, USER, HOME, INVOCATION_ID, CREDENTIALS_DIRECTORY)"),
    "secrets": Capability("full", "LoadCredential= from an absolute file or from the service manager's own credentials (systemd-credential), bound read-only at as.file; values never appear in a unit, argv or the environment; as.env and the env, vault and k8s-secret providers are not supported"),
    "egress-deny": Capability("full", "PrivateNetwork=yes (only the instance's own loopback) and IPAddressDeny=any; an HTTP server shares the host network, limited to loopback by IPAddressAllow=localhost"),
    "egress-allowlist": Capability("full", "the instance has no network but a unix socket: its socat relays 127.0.0.1:3128 to a socket-activated systemd-socket-proxyd and a squid that allows only the listed names and ports"),
    "metadata-blocking": Capability("full", "squid refuses metadata and private addresses after name resolution; direct egress gets IPAddressDeny= of the metadata ranges"),
    "listeners": Capability("full", "PrivateNetwork=yes: a listener is reachable only inside the instance's own network namespace; SocketBindDeny=any as well"),
    "memory": Capability("full", "MemoryMax= (and MemorySwapMax=0) on the instance's cgroup"),
    "pids": Capability("full", "TasksMax= on the instance's cgroup"),
    "cpu": Capability("full", "CPUQuota= of cpus x 100%"),
    "lifetime": Capability("full", "RuntimeMaxSec=: systemd stops the instance at max_lifetime (SIGTERM, SIGKILL 5 s later)"),
    "idle-timeout": Capability("none", "systemd cannot tell an idle MCP session from a slow one; the client or an orchestrator must stop idle instances"),
    "package-install": Capability("partial", "registries are reachable only if the egress allowlist lists them; registries and lockfile are not checked"),
    "process-policy": Capability("partial", "denied command names are made inaccessible in /usr/local/bin, /usr/local/sbin, /usr/bin, /usr/sbin, /bin and /sbin (InaccessiblePaths=); the allow list, background and per-command limits are not enforced"),
    "workspace-lifecycle": Capability("partial", "each instance gets fresh, empty workspace dirs in memory under /run (not under workspace.root), removed when it stops; artifacts are not copied out"),
    "audit-log": Capability("partial", "one JSON line per instance when it stops (ExecStopPost=: result, exit status, mounts, egress policy) to the journal or the sink file, and squid's access log of each destination; tool calls are not logged"),
    "image": Capability("none", "the server runs from the host's /usr and its mounts, not from the pinned image"),
    "call-policy": Capability("none", "approvals, rate limits and call timeouts act on MCP messages, which a sandbox does not see"),
}

USAGE = """\
The build writes, per server that runs here:

- `mcp-<server>@.service`: a template; one instance is one agent run;
- `mcp-<server>.socket` (stdio servers): every connection to
  `/run/mcp-<project>/<server>.sock` starts one instance whose stdin and stdout
  are the connection;
- with an egress allowlist: `<server>.squid.conf` and `mcp-<server>-squid.service`
  (squid on `127.0.0.1:<port>`, port = 20000 + crc32("<project>/<server>") mod 20000,
  written in the unit); stdio servers also get `mcp-<server>-egress.socket` and
  `mcp-<server>-egress.service` (systemd-socket-proxyd from the unix socket
  `/run/mcp-<project>-egress/<server>.sock` to squid). An instance starts them
  when it needs them.

Requirements: systemd 250 or newer; `squid` and `socat` for servers with an egress
allowlist. `SocketBindDeny=` needs a systemd built with the BPF framework; elsewhere
it is ignored (a private network still isolates stdio servers).

Install (as root):

```sh
mcpspec build mcp-sandbox.yaml --target systemd --out build/systemd
install -m 0644 build/systemd/*.service build/systemd/*.socket /etc/systemd/system/
install -d -m 0755 /etc/mcpspec/<project>
install -m 0644 build/systemd/*.squid.conf /etc/mcpspec/<project>/   # servers with egress only
systemctl daemon-reload
systemctl enable --now mcp-<server>.socket   # each stdio server
```

Run a stdio server: give the MCP client
`socat STDIO UNIX-CONNECT:/run/mcp-<project>/<server>.sock` as the server's
command. The socket is `0600 root`; to let the agent's user connect, add a
drop-in (`systemctl edit mcp-<server>.socket`) with `[Socket]` and
`SocketUser=<agent user>`. Closing the connection stops the instance.

Run an HTTP server for one run: `systemctl start mcp-<server>@<run-id>.service`
(a run id of letters, digits, `.`, `_` and `-`), point the client at
`http://127.0.0.1:<port>/`, and `systemctl stop mcp-<server>@<run-id>.service`
at the end. Instances of one HTTP server share its port: one run at a time.

While an instance runs, its workspace dirs are
`/run/mcp-<project>/<server>/<instance>/<dir>` on the host (root only); they are
removed when the instance stops, so copy artifacts out before. Read-only
workspace dirs start empty. Mount targets missing on the host are created there
as empty directories or files when an instance starts.

Audit lines go to the journal (`journalctl -u 'mcp-<server>@*'`) or to the spec's
sink file; squid logs each destination to
`/var/log/mcp-<project>-<server>-squid/access.log`. Squid's loopback port is
reachable by every local user, but only towards the server's allowlist.

The egress shim of a stdio server runs `/bin/bash`, `socat`, `grep` and `sleep`
inside the sandbox, so a `process.deny` entry for them is not applied; on a host
where `/bin/sh` is bash, denying `sh` also hides bash and the server does not start.
"""


@dataclass(frozen=True, slots=True)
class _Names:
    """The names one server's units and paths use (project and server are validated names)."""

    project: str
    server: str

    @property
    def service(self) -> str:
        return f"mcp-{self.server}@.service"

    @property
    def socket(self) -> str:
        return f"mcp-{self.server}.socket"

    @property
    def squid_service(self) -> str:
        return f"mcp-{self.server}-squid.service"

    @property
    def egress_socket(self) -> str:
        return f"mcp-{self.server}-egress.socket"

    @property
    def egress_service(self) -> str:
        return f"mcp-{self.server}-egress.service"

    @property
    def squid_conf(self) -> str:
        return f"{self.server}.squid.conf"

    @property
    def listen_path(self) -> str:
        return f"/run/mcp-{self.project}/{self.server}.sock"

    @property
    def egress_path(self) -> str:
        # A directory of its own (0700 root): the socket is 0666 so that the transient
        # user can connect through its bind mount, and only the directory keeps others out.
        return f"/run/mcp-{self.project}-egress/{self.server}.sock"

    @property
    def run_dir(self) -> str:
        """Relative to /run (RuntimeDirectory=); %i is the instance."""
        return f"mcp-{self.project}/{self.server}/%i"

    @property
    def squid_dir(self) -> str:
        return f"mcp-{self.project}-{self.server}-squid"

    @property
    def squid_conf_path(self) -> str:
        return f"/etc/mcpspec/{self.project}/{self.server}.squid.conf"

    @property
    def squid_port(self) -> int:
        return SQUID_PORT_BASE + self.crc % SQUID_PORT_SPAN

    @property
    def squid_name(self) -> str:
        """squid -n: names its shared memory segments (in the host's /dev/shm), so squids do not collide; letters and digits only."""
        return f"mcpspec{self.crc:08x}"

    @property
    def crc(self) -> int:
        return zlib.crc32(f"{self.project}/{self.server}".encode())


_RANK: dict[Level, int] = {"none": 0, "partial": 1, "full": 2}


class _Refused(Exception):
    """A value of one server that the target cannot represent (TG004)."""

    def __init__(self, control: str, path: SpecPath, message: str) -> None:
        super().__init__(message)
        self.control = control
        self.path = path


class SystemdTarget:
    name = "systemd"
    description = "hardened systemd template units (stdio through socket activation, or HTTP on loopback), with a squid egress proxy"
    capabilities = CAPABILITIES

    def build(self, plan: Plan) -> BuildOutput:
        output = BuildOutput()
        for name, sandbox in plan.servers.items():
            if not sandbox.runs_here:
                continue
            gaps, overrides = _server_gaps(sandbox)
            matrix, levels = matrix_gaps(sandbox, CAPABILITIES, overrides)
            for gap in gaps:  # a data-dependent gap lowers what the manifest reports
                if gap.control in levels and _RANK[gap.level] < _RANK[levels[gap.control]]:
                    levels[gap.control] = gap.level
            gaps.extend(matrix)
            output.enforcement[name] = levels
            try:
                files = _server_files(plan, sandbox)
            except _Refused as exc:
                gaps.append(Gap(exc.control, "none", exc.path, str(exc), unrepresentable=True))
                files = {}
            output.gaps.extend(gaps)
            output.files.update(files)
        return output


# --- gaps ---


def _server_gaps(sandbox: EffectiveSandbox) -> tuple[list[Gap], Overrides]:
    """What this server asks for that the systemd target cannot give it, beyond the matrix."""
    gaps: list[Gap] = []
    overrides: Overrides = {}
    egress = egress_plan(sandbox)
    transport = sandbox.transport
    http = isinstance(transport, HttpTransport)
    if isinstance(transport, HttpTransport):
        bind = transport.bind or "127.0.0.1"
        if not _is_loopback(bind):
            gaps.append(Gap("listeners", "none", (*sandbox.path, "transport", "bind"),
                            f"transport.bind {bind}: the systemd target serves HTTP on loopback only (IPAddressAllow=localhost); bind 127.0.0.1 and put a reverse proxy in front"))
        overrides["egress-deny"] = ("partial", "an HTTP server shares the host network: IPAddressAllow=localhost lets it reach every loopback service of the host")
        if not sandbox.process.listeners:
            overrides["listeners"] = ("partial", "an HTTP server shares the host network: SocketBindDeny= allows only its port where systemd has the BPF framework, and IPAddressDeny= keeps other listeners reachable from loopback only")
    if egress.mode == "direct-open":
        _direct_gaps(sandbox, egress, http, gaps, overrides)
    _secret_gaps(sandbox, gaps)
    env = sandbox.env
    if env.inherit not in (None, "none"):
        overrides["env"] = ("partial", "a system unit has no invoking user whose environment it could inherit: env.inherit is ignored, only env.set is passed")
    for mount in sandbox.mounts:
        if mount.workspace_dir is None and (mount.source == "~" or mount.source.startswith("~/")):
            gaps.append(Gap("mounts", "none", (*mount.path, "from"),
                            f"mount from {mount.source}: a system unit has no invoking user, so ~ cannot be resolved; give an absolute path"))
        elif mount.workspace_dir is not None and not mount.tmpfs and mount.mode == "ro":
            gaps.append(Gap("workspace-lifecycle", "partial", mount.path,
                            f"workspace.{mount.workspace_dir} is read-only and starts empty in every instance: nothing fills it before the server starts"))
    sink = sandbox.logging.sink or "stderr"
    if sandbox.logging.audit and (sink == "~" or sink.startswith("~/")):
        gaps.append(Gap("audit-log", "none", sandbox.origin("logging.sink"),
                        f"logging.sink {sink}: a system unit has no invoking user, so ~ cannot be resolved; audit lines go to the journal"))
    denied = [c for c in sandbox.process.deny or () if "/" not in c]
    if egress.mode == "proxy" and not http:
        kept = sorted(SHIM_TOOLS.intersection(denied))
        if kept:
            gaps.append(Gap("process-policy", "partial", sandbox.origin("process.deny"),
                            f"denied {' and '.join(kept)} {'stays' if len(kept) == 1 else 'stay'} available: the egress shim runs {'it' if len(kept) == 1 else 'them'} inside the sandbox"))
    return gaps, overrides


def _direct_gaps(sandbox: EffectiveSandbox, egress: EgressPlan, http: bool, gaps: list[Gap], overrides: Overrides) -> None:
    names = [d for d in egress.allow if d.kind != "cidr"]
    if names:
        overrides["egress-allowlist"] = ("none", f"direct egress to {', '.join(d.text for d in names)}: names cannot be enforced by IP rules; set egress.via: proxy")
    if any(d.kind != "cidr" for d in egress.deny):
        gaps.append(Gap("egress-deny", "none", sandbox.origin("egress.deny"),
                        "names in egress.deny cannot be refused by IP rules (via: direct); set egress.via: proxy"))
    if any(d.kind == "cidr" and d.port is not None for d in egress.allow):
        overrides["egress-deny"] = ("partial", "direct egress: IPAddressAllow= opens the listed addresses on every port, not only the listed ones")
    for destination in egress.allow:
        if destination.kind != "cidr" or "metadata-blocking" in overrides:
            continue
        network = ipaddress.ip_network(destination.host, strict=False)
        for metadata in (ipaddress.ip_network(text) for text in METADATA_RANGES):
            if network.version == metadata.version and metadata != network and metadata.subnet_of(network):  # type: ignore[arg-type]
                overrides["metadata-blocking"] = ("none", f"the allowed range {network} contains the metadata range {metadata}, which IP rules cannot carve out (IPAddressAllow= wins over IPAddressDeny=); set egress.via: proxy")
                break
    if not sandbox.process.listeners and not http:
        overrides["listeners"] = ("partial", "direct egress shares the host network: SocketBindDeny=any refuses listeners where systemd has the BPF framework, and IPAddressDeny= lets only the allowed addresses reach one")


def _secret_gaps(sandbox: EffectiveSandbox, gaps: list[Gap]) -> None:
    for grant in sandbox.secrets:
        if grant.provider in ("env", "vault", "k8s-secret"):
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "provider"),
                            f"secret {grant.name!r}: a system unit reads secrets from a file or a systemd credential (LoadCredential=), not from {grant.provider}"))
        elif grant.provider == "file" and (grant.ref == "~" or grant.ref.startswith("~/")):
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "ref"),
                            f"secret {grant.name!r}: a system unit has no invoking user, so {grant.ref} cannot be resolved; give an absolute path"))
        if grant.env is not None:
            gaps.append(Gap("secrets", "none", (*grant.path, "as", "env"),
                            f"secret {grant.name!r} as {grant.env}: systemd hands credentials in as files; use as: {{file: ...}}"))


def _is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


# --- files ---


def _server_files(plan: Plan, sandbox: EffectiveSandbox) -> dict[str, str]:
    names = _Names(plan.project, sandbox.name)
    egress = egress_plan(sandbox)
    http = isinstance(sandbox.transport, HttpTransport)
    files = {names.service: _service(plan, sandbox, names, egress)}
    if not http:
        files[names.socket] = _socket(plan, sandbox, names)
    if egress.mode == "proxy":
        conf_header = _comments(plan, f"egress allowlist of MCP server {sandbox.name}, read by {names.squid_service}")
        runtime = [
            f"http_port 127.0.0.1:{names.squid_port}",
            f"pid_filename /run/{names.squid_dir}/squid.pid",
            f"coredump_dir /run/{names.squid_dir}",
            f"cache_log /var/log/{names.squid_dir}/cache.log",
            "hosts_file /etc/hosts",
            "logfile_rotate 0",
            "netdb_filename none",
        ]
        body = squid_config(egress, [line.removeprefix("# ") for line in conf_header], runtime)
        # access_log names the logformat that the base of the configuration defines, so it comes last.
        files[names.squid_conf] = body + f"access_log stdio:/var/log/{names.squid_dir}/access.log mcpspec\n"
        files[names.squid_service] = _squid_service(plan, sandbox, names)
        if not http:
            files[names.egress_socket] = _egress_socket(plan, sandbox, names)
            files[names.egress_service] = _egress_service(plan, sandbox, names)
    return files


def _comments(plan: Plan, what: str) -> list[str]:
    lines = header(plan, what)
    for line in lines:
        unit_text(line)  # refuses a line break that would end the comment
    return lines


def _render(head: list[str], sections: Iterable[tuple[str, list[str]]]) -> str:
    out = list(head)
    for title, lines in sections:
        out.extend(["", f"[{title}]", *lines])
    return "\n".join(out) + "\n"


def _describe(sandbox: EffectiveSandbox, what: str) -> str:
    """The server's description on one line; ``what`` is constant text (it may hold specifiers)."""
    text = " ".join("".join(c if ord(c) >= 0x20 and ord(c) != 0x7F else " " for c in sandbox.description).split())
    return unit_text(f"MCP server {sandbox.name}{': ' + text if text else ''}") + f" ({what})"


def _service(plan: Plan, sandbox: EffectiveSandbox, names: _Names, egress: EgressPlan) -> str:
    http = isinstance(sandbox.transport, HttpTransport)
    proxied_stdio = egress.mode == "proxy" and not http
    unit = [f"Description={_describe(sandbox, 'run %i')}", "CollectMode=inactive-or-failed"]
    needs: list[str] = []
    if egress.mode == "proxy":
        needs.append(names.squid_service)
        if proxied_stdio:
            needs.append(names.egress_socket)
    if needs:
        unit += [f"Requires={' '.join(needs)}", f"After={' '.join(needs)}"]
    if http or egress.mode == "direct-open":
        unit += ["Wants=network-online.target", "After=network-online.target"]

    service: list[str] = ["Type=simple"]
    service += _exec_start(sandbox, proxied_stdio)
    if http:
        service += ["StandardInput=null", "StandardOutput=journal", "StandardError=journal"]
    else:
        service += ["StandardInput=socket", "StandardOutput=socket", "StandardError=journal"]
    service.append(f"SyslogIdentifier=mcp-{sandbox.name}")
    if sandbox.workdir is not None:
        service.append(f"WorkingDirectory={_path(sandbox.workdir, 'mounts', sandbox.origin('workdir'))}")
    service += _environment(sandbox, names, egress, http)
    service += _identity(sandbox)
    service += _network(sandbox, egress, http)
    service += _filesystem(sandbox, names, proxied_stdio)
    service += _secrets(sandbox)
    service += _limits(sandbox)
    service += _audit(sandbox, names, egress)

    head = _comments(plan, f"the sandbox of MCP server {sandbox.name}, one instance per agent run")
    if http:
        head.append("# Start one instance per run: systemctl start mcp-" + sandbox.name + "@<run-id>.service")
    else:
        head.append(f"# Started by {names.socket}: one instance per connection to {names.listen_path}")
    return _render(head, [("Unit", unit), ("Service", service)])


def _exec_start(sandbox: EffectiveSandbox, proxied_stdio: bool) -> list[str]:
    path: SpecPath = (*sandbox.path, "command")
    if sandbox.command_is_shell:
        raise _Refused("process-policy", path, "a command given as one string is run by a shell; give it as a list of words")
    if not sandbox.command:
        raise _Refused("process-policy", (*sandbox.path,), f"server {sandbox.name!r} has no command to launch (the systemd target does not run images)")
    program = sandbox.command[0]
    if program[:1] in _EXEC_PREFIXES or ("/" in program and not program.startswith("/")):
        raise _Refused("process-policy", path, f"command {program!r}: ExecStart= needs an absolute path or a plain program name, not starting with one of {_EXEC_PREFIXES}")
    try:
        words = [unit_arg(word) for word in sandbox.command]
    except Unrepresentable as exc:
        raise _Refused("process-policy", path, str(exc)) from None
    if proxied_stdio:
        words = ["/bin/bash", "-c", unit_arg(EGRESS_SHIM), "mcpspec-egress", *words]
    return [f"ExecStart={' '.join(words)}"]


# The shim of a stdio server with an egress allowlist: socat relays 127.0.0.1:3128 inside
# the instance's network namespace to the bound-in unix socket; once it listens (port
# 0x0C38 in LISTEN state, 0A, in /proc/self/net/tcp: ProcSubset=pid hides /proc/net),
# the server replaces the shim. Constant text: it goes through unit_arg like any word.
EGRESS_SHIM = (
    "/usr/bin/socat TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/mcpspec/egress.sock </dev/null >/dev/null & "
    "for _ in {1..200}; do "
    "if /bin/grep -q ':0C38 00000000:0000 0A' /proc/self/net/tcp; then exec \"$@\"; fi; "
    "/bin/sleep 0.05; "
    "done; "
    "echo 'mcpspec: the egress bridge (socat) did not start' >&2; exit 1"
)


def _environment(sandbox: EffectiveSandbox, names: _Names, egress: EgressPlan, http: bool) -> list[str]:
    declared = dict(sandbox.env.set or {})
    if egress.mode == "proxy":
        proxy = f"http://127.0.0.1:{names.squid_port if http else PROXY_PORT}"
        for variable in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            declared[variable] = proxy  # over any spec value: nothing else is reachable
    lines = []
    for name, value in sorted(declared.items()):
        try:
            lines.append(f"Environment={unit_env(name, value)}")
        except Unrepresentable as exc:
            raise _Refused("env", (*sandbox.origin("env.set"), name), str(exc)) from None
    return lines


def _identity(sandbox: EffectiveSandbox) -> list[str]:
    program = sandbox.command[0].rsplit("/", 1)[-1] if sandbox.command else ""
    jit = program in JIT_RUNTIMES or re.sub(r"[0-9.]+$", "", program) in JIT_RUNTIMES
    return [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
        "PrivateUsers=yes",
        "SystemCallFilter=@system-service",
        "SystemCallFilter=~@privileged @resources",
        "SystemCallArchitectures=native",
        "SystemCallErrorNumber=EPERM",
        "LockPersonality=yes",
        f"MemoryDenyWriteExecute={'no' if jit else 'yes'}",
        "RestrictNamespaces=yes",
        "RestrictRealtime=yes",
        "RestrictSUIDSGID=yes",
        "RemoveIPC=yes",
        "KeyringMode=private",
        "UMask=0077",
    ]


def _hardening() -> list[str]:
    """What every unit of this target sets about the host it runs on."""
    return [
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "PrivateMounts=yes",
        "PrivateIPC=yes",
        "DevicePolicy=closed",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "ProtectClock=yes",
        "ProtectHostname=yes",
        "ProtectProc=invisible",
        "ProcSubset=pid",
    ]


def _network(sandbox: EffectiveSandbox, egress: EgressPlan, http: bool) -> list[str]:
    listeners = bool(sandbox.process.listeners)
    if not http and egress.mode == "none":
        lines = ["PrivateNetwork=yes", "RestrictAddressFamilies=AF_UNIX", "IPAddressDeny=any"]
        return lines if listeners else [*lines, "SocketBindDeny=any"]
    if not http and egress.mode == "proxy":
        # Only the instance's own loopback exists: the shim's socat and the server talk over it.
        lines = ["PrivateNetwork=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "IPAddressDeny=any", "IPAddressAllow=localhost"]
        return lines if listeners else [*lines, f"SocketBindAllow=ipv4:tcp:{PROXY_PORT}", "SocketBindDeny=any"]
    lines = ["PrivateNetwork=no", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"]
    allow = ["localhost"] if http else []
    if egress.mode == "direct-open":
        allowed = _allowed_networks(egress)
        allow += allowed
        if egress.default == "allow":
            denied = [*METADATA_RANGES, *PRIVATE_RANGES, *(_cidr(d.host) for d in egress.deny if d.kind == "cidr")]
            lines.append(f"IPAddressDeny={' '.join(dict.fromkeys(denied))}")
        else:
            lines.append("IPAddressDeny=any")
    else:
        lines.append("IPAddressDeny=any")
    if allow:
        lines.append(f"IPAddressAllow={' '.join(allow)}")
    if not listeners:
        transport = sandbox.transport
        if isinstance(transport, HttpTransport) and transport.port is not None:
            lines.append(f"SocketBindAllow=tcp:{int(transport.port)}")
        lines.append("SocketBindDeny=any")
    return lines


def _allowed_networks(egress: EgressPlan) -> list[str]:
    """The allow list's address entries, minus those inside a metadata range (always refused)."""
    metadata = [ipaddress.ip_network(text) for text in METADATA_RANGES]
    out: list[str] = []
    for destination in egress.allow:
        if destination.kind != "cidr":
            continue
        network = ipaddress.ip_network(destination.host, strict=False)
        if any(network.version == m.version and network.subnet_of(m) for m in metadata):  # type: ignore[arg-type]
            continue
        out.append(str(network))
    return list(dict.fromkeys(out))


def _cidr(host: str) -> str:
    return str(ipaddress.ip_network(host, strict=False))


def _filesystem(sandbox: EffectiveSandbox, names: _Names, proxied_stdio: bool) -> list[str]:
    lines = _hardening()
    runtime_dirs: list[str] = []
    binds: list[str] = []
    temporary: list[str] = []
    kept: list[str] = []  # paths the server needs, which no hiding may cover
    for mount in sorted(sandbox.mounts, key=lambda m: (m.target.count("/"), m.target)):
        target = _path(mount.target, "mounts", (*mount.path, "to"))
        kept.append(mount.target)
        if mount.workspace_dir is not None and mount.tmpfs:
            options = f"size={int(mount.size or DEFAULT_SCRATCH)},mode=1777" + (",ro" if mount.mode == "ro" else "")
            temporary.append(f"TemporaryFileSystem={target}:{options}")
            continue
        setting = "BindPaths" if mount.writable else "BindReadOnlyPaths"
        if mount.workspace_dir is not None:
            if not runtime_dirs:
                runtime_dirs.append(names.run_dir)
            relative = f"{names.run_dir}/{mount.workspace_dir}"  # a validated dir name
            runtime_dirs.append(relative)
            binds.append(f"{setting}=%t/{relative}:{target}")
        elif mount.source == "~" or mount.source.startswith("~/"):
            continue  # a TG001 gap already stops the build
        else:
            binds.append(f"{setting}={_path(mount.source, 'mounts', (*mount.path, 'from'))}:{target}")
    if runtime_dirs:
        lines += [f"RuntimeDirectory={' '.join(runtime_dirs)}", "RuntimeDirectoryMode=0700"]
    if proxied_stdio:
        binds.append(f"BindPaths={names.egress_path}:/run/mcpspec/egress.sock")
        kept.append("/run/mcpspec/egress.sock")
    lines += binds + temporary
    if sandbox.workdir is not None:
        kept.append(sandbox.workdir)
    if sandbox.command and sandbox.command[0].startswith("/"):
        kept.append(sandbox.command[0])
    kept.extend(grant.file for grant in sandbox.secrets if grant.file is not None)
    hidden = [d for d in HIDDEN_DIRS if not any(_overlaps(d, path) for path in kept)]
    if hidden:
        lines.append("InaccessiblePaths=" + " ".join(f"-{d}" for d in hidden))
    lines += _masks(sandbox, proxied_stdio)
    return lines


def _overlaps(a: str, b: str) -> bool:
    return a == b or b.startswith(a.rstrip("/") + "/") or a.startswith(b.rstrip("/") + "/")


def _masks(sandbox: EffectiveSandbox, proxied_stdio: bool) -> list[str]:
    lines = []
    path = sandbox.origin("process.deny")
    for command in sorted(dict.fromkeys(sandbox.process.deny or ())):
        if "/" in command:
            if command.startswith("/"):
                lines.append(f"InaccessiblePaths=-{_path(command, 'process-policy', path)}")
            continue
        if proxied_stdio and command in SHIM_TOOLS:
            continue
        lines.append("InaccessiblePaths=" + " ".join(f"-{_path(f'{d}/{command}', 'process-policy', path)}" for d in COMMAND_DIRS))
    return lines


def _secrets(sandbox: EffectiveSandbox) -> list[str]:
    loads: dict[str, str] = {}
    binds: list[str] = []
    for grant in sandbox.secrets:
        if grant.provider == "file":
            if grant.ref == "~" or grant.ref.startswith("~/"):
                continue  # TG001
            loads.setdefault(grant.name, f"LoadCredential={grant.name}:{_path(grant.ref, 'secrets', (*grant.secret_path, 'ref'))}")
        elif grant.provider == "systemd-credential":
            if not _CREDENTIAL_NAME.match(grant.ref) or grant.ref in (".", ".."):
                raise _Refused("secrets", (*grant.secret_path, "ref"), f"secret {grant.name!r}: {grant.ref!r} is not a credential name")
            # A relative source: the credential the service manager itself was given under that name.
            loads.setdefault(grant.name, f"LoadCredential={grant.name}:{grant.ref}")
        else:
            continue  # TG001
        if grant.file is not None:
            binds.append(f"BindReadOnlyPaths=%d/{grant.name}:{_path(grant.file, 'secrets', (*grant.path, 'as', 'file'))}")
    return [*loads.values(), *binds]


def _limits(sandbox: EffectiveSandbox) -> list[str]:
    runtime = sandbox.runtime
    lines = []
    if runtime.memory is not None:
        lines += [f"MemoryMax={int(runtime.memory)}", "MemorySwapMax=0"]
    if runtime.pids is not None:
        lines.append(f"TasksMax={int(runtime.pids)}")
    if runtime.cpus is not None:
        lines.append(f"CPUQuota={_percent(runtime.cpus)}")
    lifetime = sandbox.lifecycle.max_lifetime
    if lifetime is not None:
        lines.append(f"RuntimeMaxSec={max(1, math.ceil(lifetime))}")
    lines.append("TimeoutStopSec=5")
    return lines


def _percent(cpus: float) -> str:
    """cpus as a CPUQuota= percentage with at most two decimals, never 0."""
    hundredths = max(1, round(cpus * 10000))
    whole, part = divmod(hundredths, 100)
    return f"{whole}%" if not part else f"{whole}.{part:02d}".rstrip("0") + "%"


# The audit line: run as root outside the sandbox ("+"), with an empty environment
# (env -i: nothing the spec sets reaches a root bash), from values systemd fills in.
_AUDIT_SCRIPT = (
    "umask 077; "
    "clean() { local v=${1//[^A-Za-z0-9._:@-]/_}; printf %s \"${v:0:128}\"; }; "
    "line=$(printf '{\"event\":\"stop\",\"project\":\"%s\",\"server\":\"%s\",\"instance\":\"%s\",\"ended\":\"%s\","
    "\"result\":\"%s\",\"exit_code\":\"%s\",\"exit_status\":\"%s\",\"mounts\":%s,\"egress\":%s}' "
    "\"$(clean \"$1\")\" \"$(clean \"$2\")\" \"$(clean \"$3\")\" \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\" "
    "\"$(clean \"$4\")\" \"$(clean \"$5\")\" \"$(clean \"$6\")\" \"$8\" \"$9\"); "
    "case $7 in "
    "stderr|journal) printf '%s\\n' \"$line\" >&2 ;; "
    "*) mkdir -p -m 0750 -- \"${7%/*}\" && printf '%s\\n' \"$line\" >> \"$7\" || printf 'mcpspec: cannot append to %s\\n' \"$7\" >&2 ;; "
    "esac"
)


def _audit(sandbox: EffectiveSandbox, names: _Names, egress: EgressPlan) -> list[str]:
    logging = sandbox.logging
    if not logging.audit:
        return []
    sink = logging.sink or "stderr"
    if sink == "~" or sink.startswith("~/"):
        sink = "journal"  # a gap says so
    elif sink not in ("stderr", "journal"):
        sink = _path(sink, "audit-log", sandbox.origin("logging.sink"))
    mounts = [
        {"from": "tmpfs" if m.tmpfs else _audit_source(m, names), "to": m.target, "mode": m.mode}
        for m in sandbox.mounts
    ]
    policy: dict[str, object] = {"mode": egress.mode, "default": egress.default, "allow": [d.text for d in egress.allow], "deny": [d.text for d in egress.deny]}
    if egress.mode == "proxy":
        policy["log"] = f"/var/log/{names.squid_dir}/access.log"
    words = [
        "+/usr/bin/env", "-i", "/bin/bash", "--noprofile", "--norc", "-c", unit_arg(_AUDIT_SCRIPT), "mcpspec-audit",
        unit_arg(names.project), unit_arg(names.server), '"%i"', '"${SERVICE_RESULT}"', '"${EXIT_CODE}"', '"${EXIT_STATUS}"',
        unit_arg(sink), unit_arg(compact_json(mounts)), unit_arg(compact_json(policy)),
    ]
    return [f"ExecStopPost={' '.join(words)}"]


def _audit_source(mount: EffectiveMount, names: _Names) -> str:
    if mount.workspace_dir is None:
        return mount.source
    return f"/run/mcp-{names.project}/{names.server}/{{instance}}/{mount.workspace_dir}"


def _path(value: str, control: str, path: SpecPath) -> str:
    try:
        return unit_path(value)
    except Unrepresentable as exc:
        raise _Refused(control, path, str(exc)) from None


# --- the other units ---


def _socket(plan: Plan, sandbox: EffectiveSandbox, names: _Names) -> str:
    head = _comments(plan, f"the stdio endpoint of MCP server {sandbox.name}: each connection starts one {names.service} instance")
    unit = [f"Description={_describe(sandbox, 'stdio socket')}"]
    socket = [
        f"ListenStream={names.listen_path}",
        "SocketMode=0600",
        "DirectoryMode=0755",
        "Accept=yes",
        "RemoveOnStop=yes",
    ]
    return _render(head, [("Unit", unit), ("Socket", socket), ("Install", ["WantedBy=sockets.target"])])


def _helper_hardening() -> list[str]:
    return [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
        "PrivateUsers=yes",
        "SystemCallFilter=@system-service",
        "SystemCallFilter=~@privileged",
        "SystemCallArchitectures=native",
        "SystemCallErrorNumber=EPERM",
        "LockPersonality=yes",
        "MemoryDenyWriteExecute=yes",
        "RestrictNamespaces=yes",
        "RestrictRealtime=yes",
        "RestrictSUIDSGID=yes",
        "RemoveIPC=yes",
        "KeyringMode=private",
        "UMask=0077",
        *_hardening(),
    ]


def _squid_service(plan: Plan, sandbox: EffectiveSandbox, names: _Names) -> str:
    port = names.squid_port
    head = _comments(plan, f"the egress proxy of MCP server {sandbox.name}: squid on 127.0.0.1:{port}")
    head.append(f"# Port {port} = {SQUID_PORT_BASE} + crc32(\"{names.project}/{names.server}\") mod {SQUID_PORT_SPAN}.")
    unit = [
        f"Description={unit_text(f'egress proxy (squid) of MCP server {sandbox.name}')}",
        "Wants=network-online.target",
        "After=network-online.target",
    ]
    # Ready once squid listens (port in hex, state 0A = LISTEN), so that the server starts after it.
    ready = (
        f"for _ in {{1..300}}; do /bin/grep -q ':{port:04X} 00000000:0000 0A' /proc/self/net/tcp && exit 0; /bin/sleep 0.1; done; "
        "echo 'squid did not start listening' >&2; exit 1"
    )
    service = [
        "Type=simple",
        f"ExecStart={SQUID} -n {names.squid_name} -N -f {names.squid_conf_path}",
        f"ExecStartPost=/bin/bash -c {unit_arg(ready)}",
        f"RuntimeDirectory={names.squid_dir}",
        "RuntimeDirectoryMode=0700",
        f"LogsDirectory={names.squid_dir}",
        "LogsDirectoryMode=0750",
        "LimitNOFILE=65536",
        f"SyslogIdentifier=mcp-{sandbox.name}-squid",
        "Restart=on-failure",
        *_helper_hardening(),
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
        # squid refuses these after resolution; the IP rule is a second wall.
        f"IPAddressDeny={' '.join(METADATA_RANGES)}",
    ]
    return _render(head, [("Unit", unit), ("Service", service)])


def _egress_socket(plan: Plan, sandbox: EffectiveSandbox, names: _Names) -> str:
    head = _comments(plan, f"the egress socket of MCP server {sandbox.name}, bound into each instance")
    head.append("# Mode 0666 lets the server's transient user connect through its bind mount;")
    head.append("# the directory (0700 root) keeps every other user out.")
    unit = [f"Description={unit_text(f'egress socket of MCP server {sandbox.name}')}"]
    socket = [
        f"ListenStream={names.egress_path}",
        "SocketMode=0666",
        "DirectoryMode=0700",
        "RemoveOnStop=yes",
    ]
    return _render(head, [("Unit", unit), ("Socket", socket), ("Install", ["WantedBy=sockets.target"])])


def _egress_service(plan: Plan, sandbox: EffectiveSandbox, names: _Names) -> str:
    head = _comments(plan, f"relays the egress socket of MCP server {sandbox.name} to its squid")
    unit = [
        f"Description={unit_text(f'egress relay of MCP server {sandbox.name}')}",
        f"Requires={names.squid_service} {names.egress_socket}",
        f"After={names.squid_service} {names.egress_socket}",
    ]
    service = [
        f"ExecStart={SOCKET_PROXYD} 127.0.0.1:{names.squid_port}",
        f"SyslogIdentifier=mcp-{sandbox.name}-egress",
        *_helper_hardening(),
        "PrivateNetwork=no",
        "RestrictAddressFamilies=AF_UNIX AF_INET",
        "IPAddressDeny=any",
        "IPAddressAllow=localhost",
        "SocketBindDeny=any",
    ]
    return _render(head, [("Unit", unit), ("Service", service)])


TARGET = SystemdTarget()
