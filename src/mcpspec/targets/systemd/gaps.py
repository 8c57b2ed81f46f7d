"""What a server asks for that the systemd target cannot give it, beyond the capability matrix."""

from __future__ import annotations

import ipaddress

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.facts import writable_index
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.base import Gap, Overrides
from mcpspec.targets.egress import METADATA_RANGES, EgressPlan, egress_plan

# What the shim runs inside the sandbox: never masked.
SHIM_TOOLS = frozenset({"bash", "socat", "grep", "sleep"})
ENV_SHIM_TOOLS = frozenset({"bash"})


def shim_tools(sandbox: EffectiveSandbox, egress: EgressPlan) -> frozenset[str]:
    """The programs the in-sandbox shim needs for this server (none: no shim)."""
    if egress.mode == "proxy":
        return SHIM_TOOLS
    if any(grant.env is not None for grant in sandbox.secrets):
        return ENV_SHIM_TOOLS
    return frozenset()


def server_gaps(plan: Plan, sandbox: EffectiveSandbox) -> tuple[list[Gap], Overrides]:
    gaps: list[Gap] = []
    overrides: Overrides = {}
    egress = egress_plan(sandbox)
    transport = sandbox.transport
    http = isinstance(transport, HttpTransport)
    if isinstance(transport, HttpTransport):
        bind = transport.bind  # the resolver binds every launched HTTP server (127.0.0.1 unless set)
        if bind is not None and not _is_loopback(bind):
            gaps.append(Gap("listeners", "none", (*sandbox.path, "transport", "bind"),
                            f"transport.bind {bind}: the systemd target serves HTTP on the host's loopback only; bind 127.0.0.1 and put a reverse proxy in front"))
    if egress.mode == "direct-open":
        _direct_gaps(sandbox, egress, http, gaps, overrides)
    _secret_gaps(plan, sandbox, gaps)
    if sandbox.env.inherit != "none":
        overrides["env"] = ("partial", "a system unit has no invoking user whose environment it could inherit: env.inherit is ignored, only env.set is passed")
    for mount in sandbox.mounts:
        if mount.kind == "home":
            gaps.append(Gap("mounts", "none", (*mount.path, "from"),
                            f"mount from {mount.location}: a system unit has no invoking user, so ~ cannot be resolved; give an absolute path"))
        elif mount.kind == "workspace" and mount.mode == "ro":
            gaps.append(Gap("workspace-lifecycle", "partial", mount.path,
                            f"workspace.{mount.workspace_dir} is read-only and starts empty in every instance: nothing fills it before the server starts"))
    sink = sandbox.logging.sink
    file = sink.path
    holders = [f"server {server}" for server in _writers_of(plan, file.path)] if file is not None and not file.in_home else []
    if sandbox.logging.audit and holders:
        gaps.append(Gap("audit-log", "none", sandbox.origin("logging.sink"),
                        f"logging.sink {sink} lies in a directory that {', '.join(sorted(set(holders)))} can write: a sandbox can rename or delete "
                        "the log with every line in it; keep the sink outside writable mounts"))
    if sandbox.logging.audit and file is not None and not file.in_home:
        covering = _mounted_over(sandbox, egress, file.path)
        if covering:
            gaps.append(Gap("audit-log", "none", sandbox.origin("logging.sink"),
                            f"logging.sink {sink} lies under {covering}, which the server's own unit mounts: systemd applies BindPaths= and TemporaryFileSystem= "
                            "to the stop-time audit command (ExecStopPost=+) too, so the line would go into what the server mounts there (which it may write) "
                            "or vanish with the instance's tmpfs; keep the sink outside the server's mounts, /run and /dev/shm"))
    if sandbox.logging.audit and file is not None and file.in_home:
        gaps.append(Gap("audit-log", "none", sandbox.origin("logging.sink"),
                        f"logging.sink {sink}: a system unit has no invoking user, so ~ cannot be resolved; audit lines go to the journal"))
    denied = [c for c in sandbox.process.deny if "/" not in c]
    kept = sorted(shim_tools(sandbox, egress).intersection(denied))
    if kept:
        gaps.append(Gap("process-policy", "partial", sandbox.origin("process.deny"),
                        f"denied {' and '.join(kept)} {'stays' if len(kept) == 1 else 'stay'} available: the shim runs {'it' if len(kept) == 1 else 'them'} inside the sandbox"))
    return gaps, overrides


def _direct_gaps(sandbox: EffectiveSandbox, egress: EgressPlan, http: bool, gaps: list[Gap], overrides: Overrides) -> None:
    names = [d for d in egress.allow if d.kind != "cidr"]
    if names:
        overrides["egress-allowlist"] = ("none", f"direct egress to {', '.join(d.text for d in names)}: names cannot be enforced by IP rules; set egress.via: proxy")
    if any(d.kind != "cidr" for d in egress.deny):
        gaps.append(Gap("egress-deny", "none", sandbox.origin("egress.deny"),
                        "names in egress.deny cannot be refused by IP rules (via: direct); set egress.via: proxy"))
    shared = "direct egress shares the host's network namespace: every abstract unix socket of the host stays reachable" + (
        ", and so does every service on the host's 127.0.0.1 and ::1" if http else "")
    if any(d.kind == "cidr" and d.port is not None for d in egress.allow):
        shared += "; IPAddressAllow= opens the listed addresses on every port, not only the listed ones"
    overrides["egress-deny"] = ("partial", shared)
    for destination in egress.allow:
        if destination.kind != "cidr" or "metadata-blocking" in overrides:
            continue
        network = ipaddress.ip_network(destination.host, strict=False)
        for metadata in (ipaddress.ip_network(text) for text in METADATA_RANGES):
            if network.version == metadata.version and metadata != network and metadata.subnet_of(network):  # type: ignore[arg-type]
                overrides["metadata-blocking"] = ("none", f"the allowed range {network} contains the metadata range {metadata}, which IP rules cannot carve out (IPAddressAllow= wins over IPAddressDeny=); set egress.via: proxy")
                break
    if not sandbox.process.listeners:
        overrides["listeners"] = ("partial", "direct egress shares the host network: SocketBindDeny=any refuses listeners"
                                  + (" but the server's port" if http else "") + " where systemd has the BPF framework, and IPAddressDeny= lets only the allowed addresses"
                                  + (" and the host's loopback" if http else "") + " reach one")
    overrides["hidden-paths"] = ("partial", "direct egress keeps /run visible (name resolution may need it): world-accessible sockets there, D-Bus and systemd-resolved among them, stay reachable")


def _secret_gaps(plan: Plan, sandbox: EffectiveSandbox, gaps: list[Gap]) -> None:
    for grant in sandbox.secrets:
        if grant.provider in ("env", "vault", "k8s-secret"):
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "provider"),
                            f"secret {grant.name!r}: a system unit reads secrets from a file or a systemd credential (LoadCredential=), not from {grant.provider}"))
        elif grant.source is not None and grant.source.in_home:
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "ref"),
                            f"secret {grant.name!r}: a system unit has no invoking user, so {grant.ref} cannot be resolved; give an absolute path"))
        elif grant.source is not None:
            file = grant.source.path
            inside = [f"server {server}" for server in _writers_of(plan, file)]
            if file.startswith(f"/run/mcp-{plan.project}/") or file.startswith(f"/run/mcp-{plan.project}_"):
                inside.append("the instances' runtime directories")
            if inside:
                gaps.append(Gap("secrets", "none", (*grant.secret_path, "ref"),
                                f"secret {grant.name!r}: {grant.ref} lies in a directory that {', '.join(sorted(set(inside)))} can write, and the service manager reads it as root following links: a sandbox could swap it for a link to any host file; keep secrets outside writable mounts"))


def _writers_of(plan: Plan, path: str) -> list[str]:
    """The servers (that run here) with a writable host directory mounted at ``path`` or above it."""
    return [server.name for server, _ in writable_index(plan).holding(path)]


def _mounted_over(sandbox: EffectiveSandbox, egress: EgressPlan, path: str) -> str | None:
    """The mount of the server's own unit at or above ``path`` (its binds and tmpfs, the private /run and /dev/shm), if any."""
    targets = [mount.target for mount in sandbox.mounts] + (["/run"] if egress.mode != "direct-open" else []) + ["/dev/shm"]
    for target in targets:
        if path == target or path.startswith(target.rstrip("/") + "/"):
            return target
    return None


def _is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
