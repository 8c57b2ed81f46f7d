"""The units around a server's template: its stdio socket, and for an egress allowlist
its squid, the egress socket bound into each instance and the relay behind it."""

from __future__ import annotations

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.common import embedded_source, header_text
from mcpspec.targets.egress import HOST_ACL, METADATA_RANGES, PORT_ACL, EgressPlan, squid_config
from mcpspec.targets.seccomp import syscall_policy
from mcpspec.targets.systemd.directive import Directive, Fixed, UnitArg, UnitInt, UnitName, UnitNetwork, UnitPath, UnitText, directive, fixed, joined
from mcpspec.targets.systemd.names import SQUID_PORT_BASE, SQUID_PORT_SPAN, Names, instance_of
from mcpspec.targets.systemd.service import forwarded, http_port
from mcpspec.targets.systemd.unitfile import comments, confinement, describe, embedded_python, hardening, render, shell_template

SOCKET_PROXYD = "/usr/lib/systemd/systemd-socket-proxyd"
SQUID = "/usr/sbin/squid"
# Reads the host's addresses and writes squid's ACL file (run as root before each start of squid).
OWN_ADDRESSES = embedded_source("mcpspec.targets", "own_addresses.py") + "\n" + embedded_python("own_addresses_file.py")


def own_addresses_path(names: Names) -> str:
    return f"/run/{names.squid_dir}/host-addresses"


def helper_files(plan: Plan, sandbox: EffectiveSandbox, names: Names, egress: EgressPlan) -> dict[str, str]:
    """Every file of one server except its template."""
    files: dict[str, str] = {}
    if not isinstance(sandbox.transport, HttpTransport):
        files[names.socket] = _socket(plan, sandbox, names)
    elif forwarded(sandbox, egress):
        files[names.http_socket] = _http_socket(plan, sandbox, names)
        files[names.http_forwarder] = _http_forwarder(plan, sandbox, names)
    if egress.mode == "proxy":
        files[names.squid_conf] = _squid_conf(plan, sandbox, names, egress)
        files[names.squid_service] = _squid_service(plan, sandbox, names)
        files[names.egress_socket] = _egress_socket(plan, sandbox, names)
        files[names.egress_service] = _egress_service(plan, sandbox, names)
    return files


def _socket(plan: Plan, sandbox: EffectiveSandbox, names: Names) -> str:
    head = comments(plan, f"the stdio endpoint of MCP server {sandbox.name}: each connection starts one {names.service} instance")
    unit = [directive("Description", describe(sandbox, "stdio socket"))]
    socket = [
        directive("ListenStream", UnitPath(names.listen_path)),
        *(fixed(line) for line in ("SocketMode=0600", "DirectoryMode=0755", "Accept=yes", "RemoveOnStop=yes")),
    ]
    return render(head, [("Unit", unit), ("Socket", socket), ("Install", [fixed("WantedBy=sockets.target")])])


def _http_socket(plan: Plan, sandbox: EffectiveSandbox, names: Names) -> str:
    port = http_port(sandbox)
    server = UnitName(instance_of(names.service, "%i"))
    head = comments(plan, f"the HTTP port of MCP server {sandbox.name} on the host: 127.0.0.1:{port}, one run at a time")
    head.append(f"# Started with {instance_of(names.service, '%i')} (its Wants=) and stopped with it (BindsTo=); a connection")
    head.append(f"# starts {instance_of(names.http_forwarder, '%i')}, which relays it into the run's own network namespace.")
    unit = [directive("Description", describe(sandbox, "HTTP port of run %i")), directive("BindsTo", server)]
    socket = [
        directive("ListenStream", joined(Fixed("127.0.0.1:"), UnitInt(port))),
        fixed("IPAddressDeny=any"),
        fixed("IPAddressAllow=localhost"),
    ]
    return render(head, [("Unit", unit), ("Socket", socket)])


def _http_forwarder(plan: Plan, sandbox: EffectiveSandbox, names: Names) -> str:
    port = http_port(sandbox)
    transport = sandbox.transport
    inside = "[::1]" if isinstance(transport, HttpTransport) and transport.bind == "::1" else "127.0.0.1"
    server = UnitName(instance_of(names.service, "%i"))
    head = comments(plan, f"relays the HTTP port of MCP server {sandbox.name} into the network namespace of one run")
    head.append("# systemd-socket-proxyd's documented namespace pattern: the listening socket is the host's")
    head.append(f"# (from {instance_of(names.http_socket, '%i')}), every connection it makes is inside the run's namespace.")
    head.append("# JoinsNamespaceOf= also joins the run's /tmp and IPC namespace (both units have them private); it uses neither.")
    unit = [
        directive("Description", describe(sandbox, "HTTP forwarder of run %i")),
        directive("BindsTo", server),
        directive("After", server),
        directive("JoinsNamespaceOf", server),
    ]
    wait = shell_template("http-ready.sh", port=port, hex=f"{port:04X}")
    service = [
        directive("ExecStartPre", Fixed("/bin/bash -c"), UnitArg(wait)),
        directive("ExecStart", Fixed(SOCKET_PROXYD), joined(Fixed(f"{inside}:"), UnitInt(port))),
        directive("SyslogIdentifier", UnitName(f"{names.stem}_http")),
        *_helper_hardening(sandbox),
        *(fixed(line) for line in ("PrivateNetwork=yes", "RestrictAddressFamilies=AF_INET AF_INET6", "IPAddressDeny=any", "IPAddressAllow=localhost", "SocketBindDeny=any")),
    ]
    return render(head, [("Unit", unit), ("Service", service)])


def _squid_conf(plan: Plan, sandbox: EffectiveSandbox, names: Names, egress: EgressPlan) -> str:
    conf_header = header_text(plan, f"egress allowlist of MCP server {sandbox.name}, read by {names.squid_service}")
    runtime = [
        f"http_port 127.0.0.1:{names.squid_port}",
        f"pid_filename /run/{names.squid_dir}/squid.pid",
        f"coredump_dir /run/{names.squid_dir}",
        f"cache_log /var/log/{names.squid_dir}/cache.log",
        "hosts_file /etc/hosts",
        f'acl {HOST_ACL} dst "{own_addresses_path(names)}"',
        f"acl {PORT_ACL} port {names.squid_port}",
        "logfile_rotate 0",
        "netdb_filename none",
    ]
    body = squid_config(egress, conf_header, runtime, host_addresses=True)
    # access_log names the logformat that the base of the configuration defines, so it comes last.
    return body + f"access_log stdio:/var/log/{names.squid_dir}/access.log mcpspec\n"


def _helper_hardening(sandbox: EffectiveSandbox) -> list[Directive]:
    """Every helper gets its server's syscall allow-list; each sets its own RestrictAddressFamilies=."""
    return [fixed("DynamicUser=yes"), *confinement(syscall_policy(sandbox), "@privileged"), *hardening()]


def _squid_service(plan: Plan, sandbox: EffectiveSandbox, names: Names) -> str:
    port = names.squid_port
    head = comments(plan, f"the egress proxy of MCP server {sandbox.name}: squid on 127.0.0.1:{port}")
    head.append(f"# Port {port} = {SQUID_PORT_BASE} + crc32(\"{names.project}/{names.server}\") mod {SQUID_PORT_SPAN}.")
    unit = [
        directive("Description", UnitText(f"egress proxy (squid) of MCP server {sandbox.name}")),
        fixed("Wants=network-online.target"),
        fixed("After=network-online.target"),
    ]
    log = f"/var/log/{names.squid_dir}/cache.log"
    bash = Fixed("/bin/bash -c")
    service = [
        fixed("Type=simple"),
        directive("ExecStartPre", bash, UnitArg(shell_template("squid-log.sh", log=log))),
        # squid shares the host's network namespace: the host's own addresses, read at each start, are refused like loopback.
        directive("ExecStartPre", Fixed("+/usr/bin/env -i /usr/bin/python3 -I -S -c"), UnitArg(OWN_ADDRESSES), Fixed("mcpspec-own-addresses"),
                  UnitPath(own_addresses_path(names))),
        directive("ExecStart", Fixed(SQUID), Fixed("-n"), UnitName(names.squid_name), Fixed("-N -f"), UnitPath(names.squid_conf_path)),
        directive("ExecStartPost", bash, UnitArg(shell_template("squid-ready.sh", log=log, port=port))),
        directive("RuntimeDirectory", UnitName(names.squid_dir)),
        fixed("RuntimeDirectoryMode=0700"),
        directive("LogsDirectory", UnitName(names.squid_dir)),
        fixed("LogsDirectoryMode=0750"),
        fixed("LimitNOFILE=65536"),
        directive("SyslogIdentifier", UnitName(names.squid_dir)),
        fixed("Restart=on-failure"),
        *_helper_hardening(sandbox),
        fixed("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"),
        # squid refuses these after resolution; the IP rule is a second wall.
        directive("IPAddressDeny", *(UnitNetwork(network) for network in METADATA_RANGES)),
    ]
    return render(head, [("Unit", unit), ("Service", service)])


def _egress_socket(plan: Plan, sandbox: EffectiveSandbox, names: Names) -> str:
    head = comments(plan, f"the egress socket of MCP server {sandbox.name}, bound into each instance")
    head.append("# Mode 0666 lets the server's transient user connect through its bind mount;")
    head.append("# the directory (0700 root) keeps every other user out.")
    unit = [directive("Description", UnitText(f"egress socket of MCP server {sandbox.name}"))]
    socket = [
        directive("ListenStream", UnitPath(names.egress_path)),
        *(fixed(line) for line in ("SocketMode=0666", "DirectoryMode=0700", "RemoveOnStop=yes")),
    ]
    return render(head, [("Unit", unit), ("Socket", socket), ("Install", [fixed("WantedBy=sockets.target")])])


def _egress_service(plan: Plan, sandbox: EffectiveSandbox, names: Names) -> str:
    head = comments(plan, f"relays the egress socket of MCP server {sandbox.name} to its squid")
    needs = (UnitName(names.squid_service), UnitName(names.egress_socket))
    unit = [
        directive("Description", UnitText(f"egress relay of MCP server {sandbox.name}")),
        directive("Requires", *needs),
        directive("After", *needs),
    ]
    service = [
        directive("ExecStart", Fixed(SOCKET_PROXYD), joined(Fixed("127.0.0.1:"), UnitInt(names.squid_port))),
        directive("SyslogIdentifier", UnitName(f"{names.stem}_egress")),
        *_helper_hardening(sandbox),
        *(fixed(line) for line in ("PrivateNetwork=no", "RestrictAddressFamilies=AF_UNIX AF_INET", "IPAddressDeny=any", "IPAddressAllow=localhost", "SocketBindDeny=any")),
    ]
    return render(head, [("Unit", unit), ("Service", service)])
