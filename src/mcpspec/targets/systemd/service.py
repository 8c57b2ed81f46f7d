"""The template unit of one server, ``mcp-<project>_<server>@.service``: one instance per run."""

from __future__ import annotations

import ipaddress
import math
import re

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.base import Refused
from mcpspec.targets.common import compact_json
from mcpspec.targets.egress import METADATA_RANGES, PRIVATE_RANGES, EgressPlan
from mcpspec.targets.escape import Unrepresentable, unit_arg, unit_env
from mcpspec.targets.systemd.gaps import is_home, shim_tools
from mcpspec.targets.systemd.names import Names
from mcpspec.targets.systemd.unitfile import comments, confinement, describe, embedded_python, embedded_shell, hardening, path, render

# Runtimes that compile code at run time and so need writable executable memory:
# their servers run without MemoryDenyWriteExecute=yes.
JIT_RUNTIMES = frozenset({
    "bun", "bunx", "chrome", "chromium", "deno", "dotnet", "electron", "google-chrome", "java", "jshell",
    "luajit", "node", "nodejs", "npm", "npx", "pnpm", "pypy", "pypy3", "yarn",
})
PROXY_PORT = 3128  # where the shim's socat listens, inside the server's own network namespace
DEFAULT_SCRATCH = 268435456  # a tmpfs workspace dir without a size: 256 MiB, as the bwrap target
# Host directories hidden from every server (unless a mount, the command or the
# workdir lies in one): data of other services and removable media.
HIDDEN_DIRS = ("/boot", "/media", "/mnt", "/srv", "/var/backups", "/var/cache", "/var/lib", "/var/log", "/var/mail", "/var/spool")
# Where a denied command name is made inaccessible.
COMMAND_DIRS = ("/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin")
# /run, seen from inside: an empty tmpfs only root may write, where systemd binds back
# the instance's runtime directory and credentials, and the target binds the egress
# socket. D-Bus, journald, systemd-resolved and every other socket there are gone.
PRIVATE_RUN = "TemporaryFileSystem=/run:mode=0755,size=1m,nosuid,nodev,noexec"
PRIVATE_SHM = "TemporaryFileSystem=/dev/shm:mode=1777,size=16m,nosuid,nodev,noexec"
EGRESS_SOCKET = "/run/mcpspec/egress.sock"
SHIM = embedded_shell("shim.sh")
AUDIT = embedded_python("audit.py")
_EXEC_PREFIXES = "-@:+!|"
# Variables the dynamic loader and libc read: Environment= reaches the root audit
# command (ExecStopPost=+) too, where one of these would load code a sandbox wrote.
LOADER_VARIABLES = ("LD_", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "MALLOC_")
_CREDENTIAL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")


def service(plan: Plan, sandbox: EffectiveSandbox, names: Names, egress: EgressPlan) -> str:
    http = isinstance(sandbox.transport, HttpTransport)
    proxied_stdio = egress.mode == "proxy" and not http
    unit = [f"Description={describe(sandbox, 'run %i')}", "CollectMode=inactive-or-failed"]
    needs: list[str] = []
    if egress.mode == "proxy":
        needs.append(names.squid_service)
        if proxied_stdio:
            needs.append(names.egress_socket)
    if needs:
        unit += [f"Requires={' '.join(needs)}", f"After={' '.join(needs)}"]
    if http or egress.mode == "direct-open":
        unit += ["Wants=network-online.target", "After=network-online.target"]

    body: list[str] = ["Type=simple"]
    body += _exec_start(sandbox, egress, proxied_stdio)
    if http:
        body += ["StandardInput=null", "StandardOutput=journal", "StandardError=journal"]
    else:
        body += ["StandardInput=socket", "StandardOutput=socket", "StandardError=journal"]
    body.append(f"SyslogIdentifier={names.identifier}")
    if sandbox.workdir is not None:
        body.append(f"WorkingDirectory={path(sandbox.workdir, 'mounts', sandbox.origin('workdir'))}")
    body += _environment(sandbox, names, egress, http)
    body += _identity(sandbox, names)
    body += _network(sandbox, egress, http)
    body += _filesystem(sandbox, names, egress, proxied_stdio)
    body += _secrets(sandbox)
    body += _limits(sandbox)
    body += _audit(sandbox, names, egress)

    head = comments(plan, f"the sandbox of MCP server {sandbox.name}, one instance per agent run")
    if http:
        head.append(f"# Start one instance per run: systemctl start {names.stem}@<run-id>.service")
    else:
        head.append(f"# Started by {names.socket}: one instance per connection to {names.listen_path}")
    return render(head, [("Unit", unit), ("Service", body)])


def _exec_start(sandbox: EffectiveSandbox, egress: EgressPlan, proxied_stdio: bool) -> list[str]:
    spec_path: SpecPath = (*sandbox.path, "command")
    if sandbox.command_is_shell:
        raise Refused("process-policy", spec_path, "a command given as one string is run by a shell; give it as a list of words")
    if not sandbox.command:
        raise Refused("process-policy", (*sandbox.path,), f"server {sandbox.name!r} has no command to launch (the systemd target does not run images)")
    program = sandbox.command[0]
    if program[:1] in _EXEC_PREFIXES or ("/" in program and not program.startswith("/")):
        raise Refused("process-policy", spec_path, f"command {program!r}: ExecStart= needs an absolute path or a plain program name, not starting with one of {_EXEC_PREFIXES}")
    try:
        words = [unit_arg(word) for word in sandbox.command]
    except Unrepresentable as exc:
        raise Refused("process-policy", spec_path, str(exc)) from None
    if shim_tools(sandbox, egress):
        # Names only (validated: a variable and a secret name), never a value.
        options = (["egress"] if proxied_stdio else []) + [f"{g.env}={g.name}" for g in sandbox.secrets if g.env is not None]
        words = ["/bin/bash", "--noprofile", "--norc", "-c", unit_arg(SHIM), "mcpspec-shim", *options, "--", *words]
    return [f"ExecStart={' '.join(words)}"]


def _environment(sandbox: EffectiveSandbox, names: Names, egress: EgressPlan, http: bool) -> list[str]:
    declared = dict(sandbox.env.set or {})
    if egress.mode == "proxy":
        proxy = f"http://127.0.0.1:{names.squid_port if http else PROXY_PORT}"
        for variable in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            declared[variable] = proxy  # over any spec value: nothing else is reachable
    lines = []
    for name, value in sorted(declared.items()):
        if sandbox.logging.audit and name.startswith(LOADER_VARIABLES):
            raise Refused("env", (*sandbox.origin("env.set"), name),
                          f"env.set {name}: Environment= also reaches the root audit command (ExecStopPost=+), where the dynamic loader would act on it; drop it or turn logging.audit off")
        try:
            lines.append(f"Environment={unit_env(name, value)}")
        except Unrepresentable as exc:
            raise Refused("env", (*sandbox.origin("env.set"), name), str(exc)) from None
    return lines


def _identity(sandbox: EffectiveSandbox, names: Names) -> list[str]:
    program = sandbox.command[0].rsplit("/", 1)[-1] if sandbox.command else ""
    jit = program in JIT_RUNTIMES or re.sub(r"[0-9.]+$", "", program) in JIT_RUNTIMES
    # One transient user per instance: concurrent runs of a server cannot read each
    # other's workspaces or /proc/<pid>/environ, nor signal each other.
    return ["DynamicUser=yes", f"User={names.user}", *confinement("@privileged @resources", write_execute=jit)]


def _network(sandbox: EffectiveSandbox, egress: EgressPlan, http: bool) -> list[str]:
    listeners = bool(sandbox.process.listeners)
    if not http and egress.mode == "none":
        # The stdio connection arrives as a file descriptor: no socket of its own is needed.
        if not listeners:
            return ["PrivateNetwork=yes", "RestrictAddressFamilies=none", "IPAddressDeny=any", "SocketBindDeny=any"]
        return ["PrivateNetwork=yes", "RestrictAddressFamilies=AF_UNIX", "IPAddressDeny=any"]
    if not http and egress.mode == "proxy":
        # Only the instance's own loopback exists: the shim's socat and the server talk over it.
        lines = ["PrivateNetwork=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "IPAddressDeny=any", "IPAddressAllow=localhost"]
        return lines if listeners else [*lines, f"SocketBindAllow=ipv4:tcp:{PROXY_PORT}", "SocketBindDeny=any"]
    lines = ["PrivateNetwork=no", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"]
    # 127.0.0.1 and ::1, not all of loopback: 127.0.0.53 and .54 are systemd-resolved's stubs.
    allow = ["127.0.0.1", "::1"] if http else []
    if egress.mode == "direct-open":
        allow += _allowed_networks(egress)
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


def _filesystem(sandbox: EffectiveSandbox, names: Names, egress: EgressPlan, proxied_stdio: bool) -> list[str]:
    lines = hardening()
    runtime_dirs: list[str] = []
    binds: list[str] = []
    temporary: list[str] = []
    kept: list[str] = []  # paths the server needs, which no hiding may cover
    if egress.mode != "direct-open":
        temporary.append(PRIVATE_RUN)
    # PrivateDevices= binds the host's /dev/shm into the private /dev: every instance of every
    # server would share it (a server without egress could hand data to one with egress).
    temporary.append(PRIVATE_SHM)
    for mount in sorted(sandbox.mounts, key=lambda m: (m.target.count("/"), m.target)):
        target = path(mount.target, "mounts", (*mount.path, "to"))
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
        elif is_home(mount.source):
            continue  # a TG001 gap already stops the build
        else:
            binds.append(f"{setting}={path(mount.source, 'mounts', (*mount.path, 'from'))}:{target}")
    if runtime_dirs:
        lines += [f"RuntimeDirectory={' '.join(runtime_dirs)}", "RuntimeDirectoryMode=0700"]
    if proxied_stdio:
        binds.append(f"BindPaths={names.egress_path}:{EGRESS_SOCKET}")
        kept.append(EGRESS_SOCKET)
    lines += binds + temporary
    if sandbox.workdir is not None:
        kept.append(sandbox.workdir)
    if sandbox.command and sandbox.command[0].startswith("/"):
        kept.append(sandbox.command[0])
    kept.extend(grant.file for grant in sandbox.secrets if grant.file is not None)
    hidden = [d for d in HIDDEN_DIRS if not any(_overlaps(d, p) for p in kept)]
    if hidden:
        lines.append("InaccessiblePaths=" + " ".join(f"-{d}" for d in hidden))
    lines += _masks(sandbox, shim_tools(sandbox, egress))
    return lines


def _overlaps(a: str, b: str) -> bool:
    return a == b or b.startswith(a.rstrip("/") + "/") or a.startswith(b.rstrip("/") + "/")


def _masks(sandbox: EffectiveSandbox, shim: frozenset[str]) -> list[str]:
    lines = []
    spec_path = sandbox.origin("process.deny")
    for command in sorted(dict.fromkeys(sandbox.process.deny or ())):
        if "/" in command:
            if command.startswith("/"):
                lines.append(f"InaccessiblePaths=-{path(command, 'process-policy', spec_path)}")
            continue
        if command in shim:
            continue
        lines.append("InaccessiblePaths=" + " ".join(f"-{path(f'{d}/{command}', 'process-policy', spec_path)}" for d in COMMAND_DIRS))
    return lines


def _secrets(sandbox: EffectiveSandbox) -> list[str]:
    loads: dict[str, str] = {}
    binds: list[str] = []
    for grant in sandbox.secrets:
        if grant.provider == "file":
            if is_home(grant.ref):
                continue  # TG001
            loads.setdefault(grant.name, f"LoadCredential={grant.name}:{path(grant.ref, 'secrets', (*grant.secret_path, 'ref'))}")
        elif grant.provider == "systemd-credential":
            if not _CREDENTIAL_NAME.match(grant.ref) or grant.ref in (".", ".."):
                raise Refused("secrets", (*grant.secret_path, "ref"), f"secret {grant.name!r}: {grant.ref!r} is not a credential name")
            # A relative source: the credential the service manager itself was given under that name.
            loads.setdefault(grant.name, f"LoadCredential={grant.name}:{grant.ref}")
        else:
            continue  # TG001
        if grant.file is not None:
            binds.append(f"BindReadOnlyPaths=%d/{grant.name}:{path(grant.file, 'secrets', (*grant.path, 'as', 'file'))}")
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


def _audit(sandbox: EffectiveSandbox, names: Names, egress: EgressPlan) -> list[str]:
    """The audit line at stop: the helper runs as root outside the sandbox ("+"), with an
    empty environment (env -i), from values systemd fills in; it never follows a link."""
    logging = sandbox.logging
    if not logging.audit:
        return []
    sink = logging.sink or "stderr"
    if is_home(sink):
        sink = "journal"  # a gap says so
    elif sink not in ("stderr", "journal"):
        sink = path(sink, "audit-log", sandbox.origin("logging.sink"))
    mounts = [
        {"from": "tmpfs" if m.tmpfs else _audit_source(m, names), "to": m.target, "mode": m.mode}
        for m in sandbox.mounts
    ]
    policy: dict[str, object] = {"mode": egress.mode, "default": egress.default, "allow": [d.text for d in egress.allow], "deny": [d.text for d in egress.deny]}
    if egress.mode == "proxy":
        policy["log"] = f"/var/log/{names.squid_dir}/access.log"
    words = [
        "+/usr/bin/env", "-i", "/usr/bin/python3", "-I", "-S", "-c", unit_arg(AUDIT), "mcpspec-audit",
        unit_arg(names.project), unit_arg(names.server), '"%i"', '"${SERVICE_RESULT}"', '"${EXIT_CODE}"', '"${EXIT_STATUS}"',
        unit_arg(sink), unit_arg(compact_json(mounts)), unit_arg(compact_json(policy)),
    ]
    return [f"ExecStopPost={' '.join(words)}"]


def _audit_source(mount: EffectiveMount, names: Names) -> str:
    if mount.workspace_dir is None:
        return mount.source
    return f"/run/mcp-{names.project}/{names.server}/{{instance}}/{mount.workspace_dir}"
