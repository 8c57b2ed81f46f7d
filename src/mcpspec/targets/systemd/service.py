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
from mcpspec.targets.seccomp import syscall_policy
from mcpspec.targets.systemd.directive import (
    Directive,
    Fixed,
    UnitArg,
    UnitEnv,
    UnitInt,
    UnitName,
    UnitNetwork,
    UnitPath,
    UnitPercent,
    UnitValue,
    directive,
    fixed,
    joined,
)
from mcpspec.targets.systemd.gaps import shim_tools
from mcpspec.targets.systemd.names import Names, instance_of
from mcpspec.targets.systemd.unitfile import comments, confinement, describe, embedded_python, embedded_shell, hardening, render

# Runtimes that compile code at run time and so need writable executable memory:
# their servers run without MemoryDenyWriteExecute=yes.
JIT_RUNTIMES = frozenset({
    "bun", "bunx", "chrome", "chromium", "deno", "dotnet", "electron", "google-chrome", "java", "jshell",
    "luajit", "node", "nodejs", "npm", "npx", "pnpm", "pypy", "pypy3", "yarn",
})
PROXY_PORT = 3128  # where the shim's socat listens, inside the server's own network namespace
# Host directories hidden from every server (unless a mount, the command or the
# workdir lies in one): data of other services and removable media.
HIDDEN_DIRS = ("/boot", "/media", "/mnt", "/srv", "/var/backups", "/var/cache", "/var/lib", "/var/log", "/var/mail", "/var/spool")
# Where a denied command name is made inaccessible.
COMMAND_DIRS = ("/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin")
# /run, seen from inside: an empty tmpfs only root may write, where systemd binds back
# the instance's runtime directory and credentials, and the target binds the egress
# socket. D-Bus, journald, systemd-resolved and every other socket there are gone.
PRIVATE_RUN = fixed("TemporaryFileSystem=/run:mode=0755,size=1m,nosuid,nodev,noexec")
PRIVATE_SHM = fixed("TemporaryFileSystem=/dev/shm:mode=1777,size=16m,nosuid,nodev,noexec")
EGRESS_SOCKET = "/run/mcpspec/egress.sock"
SHIM = embedded_shell("shim.sh")
AUDIT = embedded_python("audit.py")
_EXEC_PREFIXES = "-@:+!|"
# Variables the dynamic loader and libc read: Environment= reaches the root audit
# command (ExecStopPost=+) too, where one of these would load code a sandbox wrote.
LOADER_VARIABLES = ("LD_", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "MALLOC_")
_CREDENTIAL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}\Z")


def service(plan: Plan, sandbox: EffectiveSandbox, names: Names, egress: EgressPlan) -> str:
    http = isinstance(sandbox.transport, HttpTransport)
    proxied = egress.mode == "proxy"
    unit = [directive("Description", describe(sandbox, "run %i")), fixed("CollectMode=inactive-or-failed")]
    needs: list[UnitValue] = []
    if proxied:
        needs += [UnitName(names.squid_service), UnitName(names.egress_socket)]
    if needs:
        unit += [directive("Requires", *needs), directive("After", *needs)]
    if forwarded(sandbox, egress):
        # The run's port on the host: the socket is bound to this instance (BindsTo=) and stops with it.
        unit.append(directive("Wants", UnitName(instance_of(names.http_socket, "%i"))))
    if egress.mode == "direct-open":
        unit += [fixed("Wants=network-online.target"), fixed("After=network-online.target")]

    body: list[Directive] = [fixed("Type=simple")]
    body += _exec_start(sandbox, egress, proxied)
    streams = ("null", "journal", "journal") if http else ("socket", "socket", "journal")
    body += [directive(key, Fixed(value)) for key, value in zip(("StandardInput", "StandardOutput", "StandardError"), streams, strict=True)]
    body.append(directive("SyslogIdentifier", UnitName(names.identifier)))
    if sandbox.workdir is not None:
        body.append(directive("WorkingDirectory", UnitPath(sandbox.workdir, ("mounts", sandbox.origin("workdir")))))
    body += _environment(sandbox, egress)
    body += _identity(sandbox, names)
    body += _network(sandbox, egress, http)
    body += _filesystem(sandbox, names, egress, proxied)
    body += _secrets(sandbox)
    body += _limits(sandbox)
    body += _audit(sandbox, names, egress)

    head = comments(plan, f"the sandbox of MCP server {sandbox.name}, one instance per agent run")
    if forwarded(sandbox, egress):
        head.append(f"# Start one instance per run: systemctl start {names.stem}@<run-id>.service; it listens in its own")
        head.append(f"# network namespace, and {instance_of(names.http_socket, '<run-id>')} forwards the host's 127.0.0.1:{http_port(sandbox)} to it")
    elif http:
        head.append(f"# Start one instance per run: systemctl start {names.stem}@<run-id>.service")
    else:
        head.append(f"# Started by {names.socket}: one instance per connection to {names.listen_path}")
    return render(head, [("Unit", unit), ("Service", body)])


def forwarded(sandbox: EffectiveSandbox, egress: EgressPlan) -> bool:
    """An HTTP server in its own network namespace, whose port the host reaches through a forwarder."""
    return isinstance(sandbox.transport, HttpTransport) and egress.mode != "direct-open"


def http_port(sandbox: EffectiveSandbox) -> int:
    transport = sandbox.transport
    assert isinstance(transport, HttpTransport) and transport.port is not None  # the resolver requires a port of a launched HTTP server
    return int(transport.port)


def _exec_start(sandbox: EffectiveSandbox, egress: EgressPlan, proxied: bool) -> list[Directive]:
    spec_path: SpecPath = (*sandbox.path, "command")
    if sandbox.command_is_shell:
        raise Refused("process-policy", spec_path, "a command given as one string is run by a shell; give it as a list of words")
    if not sandbox.command:
        raise Refused("process-policy", (*sandbox.path,), f"server {sandbox.name!r} has no command to launch (the systemd target does not run images)")
    program = sandbox.command[0]
    if program[:1] in _EXEC_PREFIXES or ("/" in program and not program.startswith("/")):
        raise Refused("process-policy", spec_path, f"command {program!r}: ExecStart= needs an absolute path or a plain program name, not starting with one of {_EXEC_PREFIXES}")
    words: list[UnitValue] = [UnitArg(word, ("process-policy", spec_path)) for word in sandbox.command]
    if shim_tools(sandbox, egress):
        # Names only (validated: a variable and a secret name), never a value.
        options = (["egress"] if proxied else []) + [f"{g.env}={g.name}" for g in sandbox.secrets if g.env is not None]
        shim = [Fixed("/bin/bash --noprofile --norc -c"), UnitArg(SHIM), Fixed("mcpspec-shim"), *(UnitName(option) for option in options), Fixed("--")]
        words = [*shim, *words]
    return [directive("ExecStart", *words)]


def _environment(sandbox: EffectiveSandbox, egress: EgressPlan) -> list[Directive]:
    declared = dict(sandbox.env.set)
    if egress.mode == "proxy":
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        for variable in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            declared[variable] = proxy  # over any spec value: nothing else is reachable
    lines = []
    for name, value in sorted(declared.items()):
        if sandbox.logging.audit and name.startswith(LOADER_VARIABLES):
            raise Refused("env", (*sandbox.origin("env.set"), name),
                          f"env.set {name}: Environment= also reaches the root audit command (ExecStopPost=+), where the dynamic loader would act on it; drop it or turn logging.audit off")
        lines.append(directive("Environment", UnitEnv(name, value, ("env", (*sandbox.origin("env.set"), name)))))
    return lines


def _identity(sandbox: EffectiveSandbox, names: Names) -> list[Directive]:
    program = sandbox.command[0].rsplit("/", 1)[-1] if sandbox.command else ""
    jit = program in JIT_RUNTIMES or re.sub(r"[0-9.]+$", "", program) in JIT_RUNTIMES
    # One transient user per instance: concurrent runs of a server cannot read each
    # other's workspaces or /proc/<pid>/environ, nor signal each other.
    return [fixed("DynamicUser=yes"), directive("User", UnitName(names.user)), *confinement(syscall_policy(sandbox), "@privileged @resources", write_execute=jit)]


def address_families(sandbox: EffectiveSandbox, wanted: tuple[str, ...]) -> Directive:
    """RestrictAddressFamilies=: what this unit needs, never more than the syscall policy allows."""
    allowed = syscall_policy(sandbox).socket_families
    families = [family for family in wanted if family in allowed]
    return fixed(f"RestrictAddressFamilies={' '.join(families) or 'none'}")


def _network(sandbox: EffectiveSandbox, egress: EgressPlan, http: bool) -> list[Directive]:
    if egress.mode == "direct-open":
        return _host_network(sandbox, egress, http)
    # Its own network namespace: only the instance's loopback, and no abstract unix socket
    # of the host either (those belong to a network namespace, not to the file system).
    listeners = sandbox.process.listeners
    lines = [fixed("PrivateNetwork=yes")]
    families: tuple[str, ...] = ("AF_UNIX", "AF_INET", "AF_INET6")  # as far as the policy allows
    if egress.mode == "none" and not listeners:
        # A stdio connection arrives as a file descriptor: no socket of its own is needed; an
        # HTTP server needs its inet listener only. (With an allowlist, the shim's socat reaches
        # the egress socket over AF_UNIX and the server reaches socat over the instance's loopback.)
        families = ("AF_INET", "AF_INET6") if http else ()
    lines.append(address_families(sandbox, families))
    lines.append(fixed("IPAddressDeny=any"))
    if http or egress.mode == "proxy":
        lines.append(fixed("IPAddressAllow=localhost"))
    if listeners:
        return lines
    binds: list[UnitValue] = []
    if http:
        binds.append(joined(Fixed("tcp:"), UnitInt(http_port(sandbox))))
    if egress.mode == "proxy":
        if http and http_port(sandbox) == PROXY_PORT:
            raise Refused("listeners", (*sandbox.path, "transport", "port"), f"port {PROXY_PORT} is where the egress bridge listens inside the sandbox; give the server another port")
        binds.append(joined(Fixed("ipv4:tcp:"), UnitInt(PROXY_PORT)))
    lines += [directive("SocketBindAllow", bind) for bind in binds]  # one rule a line
    return [*lines, fixed("SocketBindDeny=any")]


def _host_network(sandbox: EffectiveSandbox, egress: EgressPlan, http: bool) -> list[Directive]:
    """Direct egress: the host's network, limited by IP rules."""
    lines = [fixed("PrivateNetwork=no"), address_families(sandbox, ("AF_UNIX", "AF_INET", "AF_INET6"))]
    # 127.0.0.1 and ::1, not all of loopback: 127.0.0.53 and .54 are systemd-resolved's stubs.
    allow = ["127.0.0.1", "::1"] if http else []
    allow += _allowed_networks(egress)
    if egress.default == "allow":
        denied = [*METADATA_RANGES, *PRIVATE_RANGES, *(_cidr(d.host) for d in egress.deny if d.kind == "cidr")]
        lines.append(directive("IPAddressDeny", *(UnitNetwork(network) for network in dict.fromkeys(denied))))
    else:
        lines.append(fixed("IPAddressDeny=any"))
    if allow:
        lines.append(directive("IPAddressAllow", *(UnitNetwork(network) for network in allow)))
    if not sandbox.process.listeners:
        if http:
            lines.append(directive("SocketBindAllow", joined(Fixed("tcp:"), UnitInt(http_port(sandbox)))))
        lines.append(fixed("SocketBindDeny=any"))
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


def _filesystem(sandbox: EffectiveSandbox, names: Names, egress: EgressPlan, proxied: bool) -> list[Directive]:
    lines = hardening()
    runtime_dirs: list[str] = []
    binds: list[Directive] = []
    temporary: list[Directive] = []
    kept: list[str] = []  # paths the server needs, which no hiding may cover
    if egress.mode != "direct-open":
        temporary.append(PRIVATE_RUN)
    # PrivateDevices= binds the host's /dev/shm into the private /dev: every instance of every
    # server would share it (a server without egress could hand data to one with egress).
    temporary.append(PRIVATE_SHM)
    for mount in sorted(sandbox.mounts, key=lambda m: (m.target.count("/"), m.target)):
        target = UnitPath(mount.target, ("mounts", (*mount.path, "to")))
        target.rendered()  # refused here, before any other setting of this mount
        kept.append(mount.target)
        if mount.kind == "tmpfs":
            options = joined(Fixed(":size="), UnitInt(mount.size), Fixed(",mode=1777" + (",ro" if mount.mode == "ro" else "")))
            temporary.append(directive("TemporaryFileSystem", joined(target, options)))
            continue
        setting = "BindPaths" if mount.writable else "BindReadOnlyPaths"
        if mount.workspace_dir is not None:
            if not runtime_dirs:
                runtime_dirs.append(names.run_dir)
            relative = f"{names.run_dir}/{mount.workspace_dir}"  # a validated dir name
            runtime_dirs.append(relative)
            binds.append(directive(setting, joined(Fixed("%t/"), UnitName(relative), Fixed(":"), target)))
        elif mount.kind == "home":
            continue  # a TG001 gap already stops the build
        else:
            binds.append(directive(setting, joined(UnitPath(mount.source, ("mounts", (*mount.path, "from"))), Fixed(":"), target)))
    if runtime_dirs:
        lines += [directive("RuntimeDirectory", *(UnitName(d) for d in runtime_dirs)), fixed("RuntimeDirectoryMode=0700")]
    if proxied:
        binds.append(directive("BindPaths", joined(UnitPath(names.egress_path), Fixed(":"), UnitPath(EGRESS_SOCKET))))
        kept.append(EGRESS_SOCKET)
    lines += binds + temporary
    if sandbox.workdir is not None:
        kept.append(sandbox.workdir)
    if sandbox.command and sandbox.command[0].startswith("/"):
        kept.append(sandbox.command[0])
    kept.extend(grant.file for grant in sandbox.secrets if grant.file is not None)
    hidden = [d for d in HIDDEN_DIRS if not any(_overlaps(d, p) for p in kept)]
    if hidden:
        lines.append(directive("InaccessiblePaths", *(_optional(UnitPath(d)) for d in hidden)))
    lines += _masks(sandbox, shim_tools(sandbox, egress))
    return lines


def _optional(path: UnitPath) -> UnitValue:
    """A path of InaccessiblePaths= that may be missing on the host ("-")."""
    return joined(Fixed("-"), path)


def _overlaps(a: str, b: str) -> bool:
    return a == b or b.startswith(a.rstrip("/") + "/") or a.startswith(b.rstrip("/") + "/")


def _masks(sandbox: EffectiveSandbox, shim: frozenset[str]) -> list[Directive]:
    lines = []
    origin = ("process-policy", sandbox.origin("process.deny"))
    for command in sorted(dict.fromkeys(sandbox.process.deny)):
        if "/" in command:
            if command.startswith("/"):
                lines.append(directive("InaccessiblePaths", _optional(UnitPath(command, origin))))
            continue
        if command in shim:
            continue
        lines.append(directive("InaccessiblePaths", *(_optional(UnitPath(f"{d}/{command}", origin)) for d in COMMAND_DIRS)))
    return lines


def _secrets(sandbox: EffectiveSandbox) -> list[Directive]:
    loads: dict[str, Directive] = {}
    binds: list[Directive] = []
    for grant in sandbox.secrets:
        name = UnitName(grant.name)  # a validated secret name
        if grant.source is not None:
            if grant.source.in_home:
                continue  # TG001
            source: UnitValue = UnitPath(grant.source.path, ("secrets", (*grant.secret_path, "ref")))
        elif grant.provider == "systemd-credential":
            if not _CREDENTIAL_NAME.match(grant.ref) or grant.ref in (".", ".."):
                raise Refused("secrets", (*grant.secret_path, "ref"), f"secret {grant.name!r}: {grant.ref!r} is not a credential name")
            # A relative source: the credential the service manager itself was given under that name.
            source = UnitName(grant.ref)
        else:
            continue  # TG001
        loads.setdefault(grant.name, directive("LoadCredential", joined(name, Fixed(":"), source)))
        if grant.file is not None:
            binds.append(directive("BindReadOnlyPaths", joined(Fixed("%d/"), name, Fixed(":"), UnitPath(grant.file, ("secrets", (*grant.path, "as", "file"))))))
    return [*loads.values(), *binds]


def _limits(sandbox: EffectiveSandbox) -> list[Directive]:
    runtime = sandbox.resources
    lines = []
    if runtime.memory is not None:
        lines += [directive("MemoryMax", UnitInt(int(runtime.memory))), fixed("MemorySwapMax=0")]
    if runtime.pids is not None:
        lines.append(directive("TasksMax", UnitInt(int(runtime.pids))))
    if runtime.cpus is not None:
        lines.append(directive("CPUQuota", UnitPercent(runtime.cpus)))
    lifetime = sandbox.lifecycle.max_lifetime
    if lifetime is not None:
        lines.append(directive("RuntimeMaxSec", UnitInt(max(1, math.ceil(lifetime)))))
    lines.append(fixed("TimeoutStopSec=5"))
    return lines


def _audit(sandbox: EffectiveSandbox, names: Names, egress: EgressPlan) -> list[Directive]:
    """The audit line at stop: the helper runs as root outside the sandbox ("+"), with an
    empty environment (env -i), from values systemd fills in; it never follows a link."""
    logging = sandbox.logging
    if not logging.audit:
        return []
    file = logging.sink.path
    sink: str
    if file is None:
        sink = logging.sink.kind
    elif file.in_home:
        sink = "journal"  # a gap says so
    else:
        sink = UnitPath(file.path, ("audit-log", sandbox.origin("logging.sink"))).rendered()  # a plain absolute path, or refused
    mounts = [
        {"from": "tmpfs" if m.tmpfs else _audit_source(m, names), "to": m.target, "mode": m.mode}
        for m in sandbox.mounts
    ]
    policy: dict[str, object] = {"mode": egress.mode, "default": egress.default, "allow": [d.text for d in egress.allow], "deny": [d.text for d in egress.deny]}
    if egress.mode == "proxy":
        policy["log"] = f"/var/log/{names.squid_dir}/access.log"
    words = [
        Fixed("+/usr/bin/env -i /usr/bin/python3 -I -S -c"), UnitArg(AUDIT), Fixed("mcpspec-audit"),
        UnitArg(names.project), UnitArg(names.server), Fixed('"%i" "${SERVICE_RESULT}" "${EXIT_CODE}" "${EXIT_STATUS}"'),
        UnitArg(sink), UnitArg(compact_json(mounts)), UnitArg(compact_json(policy)),
    ]
    return [directive("ExecStopPost", *words)]


def _audit_source(mount: EffectiveMount, names: Names) -> str:
    if mount.workspace_dir is None:
        return mount.location
    return f"/run/mcp-{names.project}/{names.server}/{{instance}}/{mount.workspace_dir}"
