"""What the probe is asked to observe (from the Plan and this host), and how its report is judged.

Expected values come from the Plan, never from the launcher: an edited launcher is caught
because what the probe observes differs from what the spec says.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import pwd
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.spec.values import Destination as SpecDestination
from mcpspec.targets.bwrap import MINIMAL_ENV, launcher_secret, runtime
from mcpspec.targets.egress import egress_plan

MIB = 1 << 20
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
# bwrap sets PWD for the sandbox's first process; it is not the spec's to declare.
RUNTIME_VARIABLES = frozenset({"PWD"})
CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")

Status = Literal["pass", "fail", "skipped"]
FAMILIES = frozenset({"hidden", "mounts", "env", "secrets", "identity", "egress", "egress-allowed", "pids", "memory", "lifetime"})


@dataclass(frozen=True)
class Row:
    """One control checked on one server's live sandbox."""

    server: str
    control: str
    expected: str
    observed: str
    status: Status

    def as_json(self) -> dict[str, str]:
        return {"server": self.server, "control": self.control, "expected": self.expected, "observed": self.observed, "status": self.status}


@dataclass(frozen=True)
class Destination:
    """A place a connection is tried to: ``label`` names it in the report."""

    host: str
    port: int
    label: str = ""

    @property
    def text(self) -> str:
        authority = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        return f"{self.label} {authority}" if self.label else authority


@dataclass(frozen=True)
class Options:
    """How verify probes: the destinations, the lifetime bound and the controls skipped on purpose."""

    denied: tuple[Destination, ...]
    allowed: tuple[Destination, ...] | None = None  # None: the spec's own allowlist
    lifetime_limit: float = 120.0
    skip: frozenset[str] = frozenset()


@dataclass
class Request:
    """The probe's input, and what verify keeps to judge its report (secret digests never leave here but to the probe)."""

    checks: dict[str, Any] = field(default_factory=dict)
    hidden: dict[str, list[str]] = field(default_factory=dict)  # path -> the entries mount targets put in it
    places: dict[str, set[str]] = field(default_factory=dict)  # secret -> where it must be, exactly
    unreadable: dict[str, str] = field(default_factory=dict)  # secret -> why verify could not read its value
    lifetime: float | None = None


def parse_destination(text: str) -> Destination:
    """``HOST:PORT`` or ``[V6]:PORT``; ValueError otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise ValueError(f"{text!r}: expected HOST:PORT (an IPv6 address in brackets)")
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"{text!r}: an IPv6 address goes in brackets")
        host = host[1:-1]
    return Destination(host, int(port))


DEFAULT_DENIED = tuple(parse_destination(text) for text in ("169.254.169.254:80", "10.0.0.1:80", "[fd00:ec2::254]:80"))


def host_paths(spec: Path, extra: Iterable[str]) -> list[str]:
    """Well-known host paths no sandbox should see: homes, /root, /etc/shadow, the spec's directory, ..."""
    candidates = [os.environ.get("HOME", ""), pwd.getpwuid(os.getuid()).pw_dir, "/root", "/home", "/etc/shadow", "/etc/sudoers",
                  "/var/log", "/run/user", str(spec.resolve().parent), *extra]
    seen: list[str] = []
    for path in candidates:
        if path.startswith("/") and path != "/" and os.path.lexists(path):
            normal = os.path.normpath(path)
            if normal not in seen:
                seen.append(normal)
    return seen


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def hidden_expectations(paths: Iterable[str], targets: Iterable[str]) -> dict[str, list[str]]:
    """For each host path not itself mounted: the names the sandbox may show in it (mount points below it)."""
    targets = list(targets)
    out: dict[str, list[str]] = {}
    for path in paths:
        if any(_under(path, target) for target in targets):
            continue  # mounted on purpose (or inside a mount): visible by design
        out[path] = sorted({target[len(path.rstrip("/")) + 1:].split("/")[0] for target in targets if _under(target, path) and target != path})
    return out


def expected_environment(sandbox: EffectiveSandbox, environ: Mapping[str, str]) -> set[str]:
    """The variable names the Plan gives the server, as the launcher reads them from ``environ``."""
    env = sandbox.env
    if env.inherit == "all":
        inherited = set(environ)
    elif env.inherit == "minimal":
        inherited = {name for name in MINIMAL_ENV if name in environ}
    elif isinstance(env.inherit, tuple):
        inherited = {name for name in env.inherit if name in environ}
    else:
        inherited = set()
    names = inherited | set(env.set) | {grant.env for grant in sandbox.secrets if grant.env is not None}
    if "PATH" not in names and env.inherit != "all":
        names.add("PATH")  # the target's DEFAULT_PATH
    if egress_plan(sandbox).mode == "proxy":
        names |= set(PROXY_VARIABLES)
    return names


def secret_value(sandbox: EffectiveSandbox, name: str) -> bytes:
    """The value the launcher will read for secret ``name``, read by the launcher's own code
    (OSError, KeyError or the launcher's Refusal when it cannot be read)."""
    grant = next(g for g in sandbox.secrets if g.name == name)
    secret = launcher_secret(grant)
    if secret is None:
        raise KeyError(f"provider {grant.for_target('bwrap').provider} is not one the bwrap launcher reads")
    return runtime.secret_value(runtime.TrustedPaths(), secret)


def request(sandbox: EffectiveSandbox, spec: Path, options: Options, listeners: tuple[Destination, ...],
            mount_targets: Iterable[str], extra_hidden: Iterable[str] = ()) -> Request:
    """The probe's input for one server."""
    req = Request()
    targets = [*mount_targets, *(m.target for m in sandbox.mounts)]
    req.hidden = hidden_expectations(host_paths(spec, extra_hidden), targets)
    writes = [m.target for m in sandbox.mounts]
    if sandbox.read_only_root:
        writes.append("/")
    wanted = []
    for grant in sandbox.secrets:
        req.places[grant.name] = {f"env {grant.env}"} if grant.env else set()
        if grant.file:
            req.places[grant.name].add(f"file {grant.file}")
        try:
            value = secret_value(sandbox, grant.name).rstrip(b"\n")
        except (OSError, KeyError, runtime.Refusal) as exc:
            req.unreadable[grant.name] = f"verify cannot read its value: {exc}"
            continue
        if not value:
            req.unreadable[grant.name] = "its value is empty: nothing tells it apart"
            continue
        wanted.append({"name": grant.name, "sha256": hashlib.sha256(value).hexdigest(), "length": len(value)})
    egress = egress_plan(sandbox)
    denied = [d for d in (*listeners, *options.denied) if not allowed_by_spec(d, egress.allow)]
    allowed = list(options.allowed) if options.allowed is not None else [
        Destination(d.host, d.port) for d in egress.allow if d.port is not None and (d.kind == "domain" or d.network.num_addresses == 1)]
    req.checks = {
        "hidden": list(req.hidden),
        "writes": writes,
        "secrets": wanted,
        "direct": [vars(d) for d in denied],
        "proxied": [vars(d) for d in denied] + [{**vars(d), "allowed": True} for d in allowed] if egress.mode == "proxy" else [],
        "pids": sandbox.resources.pids,
        "memory": sandbox.resources.memory,
    }
    lifetime = sandbox.lifecycle.max_lifetime
    if lifetime is not None and "lifetime" not in options.skip and lifetime <= options.lifetime_limit:
        req.checks["outlive"] = True
        req.lifetime = lifetime
    return req


def allowed_by_spec(destination: Destination, allow: Iterable[SpecDestination]) -> bool:
    """Whether the spec's allowlist lists this address and port (then it is not a place to refuse)."""
    try:
        address = ipaddress.ip_address(destination.host)
    except ValueError:
        return any(entry.kind == "domain" and entry.host == destination.host and entry.port in (None, destination.port) for entry in allow)
    return any(entry.kind == "cidr" and address in entry.network and entry.port in (None, destination.port) for entry in allow)


def duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


class Judge:
    """Turns one probe report into rows."""

    def __init__(self, server: str, sandbox: EffectiveSandbox, req: Request, options: Options, environ: Mapping[str, str]) -> None:
        self.server, self.sandbox, self.req, self.options, self.environ = server, sandbox, req, options, environ
        self.rows: list[Row] = []

    def row(self, family: str, control: str, expected: str, observed: str, ok: bool) -> None:
        status: Status = "skipped" if family in self.options.skip else ("pass" if ok else "fail")
        self.rows.append(Row(self.server, control, expected, observed, status))

    def judge(self, report: Mapping[str, Any], accepted: Mapping[str, int]) -> list[Row]:
        self.identity(report["identity"])
        self.hidden(report["hidden"])
        self.mounts(report["mounts"])
        self.environment(report["environment"])
        self.secrets(report["secrets"])
        self.egress(report, accepted)
        self.limits(report)
        return self.rows

    def identity(self, seen: Mapping[str, Any]) -> None:
        uid = self.sandbox.identity.uid
        observed = f"uid {seen['uid']}, euid {seen['euid']}"
        self.row("identity", "identity: uid", f"uid {uid} (not 0)", observed, uid != 0 and seen["uid"] == seen["euid"] == uid)
        status = seen["status"]
        nonzero = [name for name in CAPABILITY_SETS if int(status.get(name) or "1", 16) != 0]
        self.row("identity", "identity: capabilities", "none (" + ", ".join(CAPABILITY_SETS) + " all 0)",
                 "none" if not nonzero else "; ".join(f"{name} {status.get(name)}" for name in nonzero), not nonzero)

    def hidden(self, seen: list[Mapping[str, Any]]) -> None:
        for item in seen:
            allowed = self.req.hidden[item["path"]]
            expected = "absent" if not allowed else f"only the mount points {', '.join(allowed)}"
            if item["state"] == "absent":
                observed, ok = "absent", True
            elif "entries" in item:
                extra = sorted(set(item["entries"]) - set(allowed))
                ok = bool(allowed) and not extra
                observed = f"present, {item['count']} entries" + (f": {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}" if extra else "")
            else:
                observed, ok = f"present ({item.get('kind') or item.get('error')})", False
            self.row("hidden", f"hidden: {item['path']}", expected, observed, ok)

    def mounts(self, seen: list[Mapping[str, Any]]) -> None:
        modes = {m.target: m.mode for m in self.sandbox.mounts}
        for item in seen:
            target = item["target"]
            mode = modes.get(target, "ro")
            expected = "writable" if mode == "rw" else "refuses writes"
            if not item["exists"]:
                observed, ok = f"missing ({item.get('error')})", False
            elif item["writable"]:
                observed, ok = "writable", mode == "rw"
            else:
                observed, ok = f"refuses writes ({item.get('error')})", mode == "ro"
            self.row("mounts", f"mount {mode}: {target}", expected, observed, ok)

    def environment(self, names: list[str]) -> None:
        expected = expected_environment(self.sandbox, self.environ)
        seen = set(names) - RUNTIME_VARIABLES
        extra, missing = sorted(seen - expected), sorted(expected - seen)
        parts = [f"{len(seen)} names"] + ([f"undeclared: {', '.join(extra[:8])}{' ...' if len(extra) > 8 else ''}"] if extra else []) + (
            [f"missing: {', '.join(missing)}"] if missing else [])
        self.row("env", "env: names", "exactly " + (", ".join(sorted(expected)) or "none") + " (and bwrap's PWD)", "; ".join(parts), not extra and not missing)

    def secrets(self, seen: Mapping[str, Any]) -> None:
        for name, places in self.req.places.items():
            expected = "only at " + (" and ".join(sorted(places)) or "no place")
            if name in self.req.unreadable:
                self.row("secrets", f"secret: {name}", expected, f"not checked: {self.req.unreadable[name]}", False)
                continue
            found = set(seen["found"].get(name, []))
            observed = "at " + ", ".join(sorted(found)) if found else "nowhere"
            self.row("secrets", f"secret: {name}", expected, f"{observed} (searched {seen['searched']} entries and every command line)", found == places)

    def egress(self, report: Mapping[str, Any], accepted: Mapping[str, int]) -> None:
        mode = egress_plan(self.sandbox).mode
        if mode == "direct-open":
            self.row("egress", "egress: network", "not shared with the host", "the spec shares the host network: bwrap filters nothing there", False)
            return
        for item in report["direct"]:
            label = Destination(item["host"], item["port"], item.get("label", "")).text
            reached = item["connected"] or accepted.get(label, 0) > 0
            observed = "connected" if reached else (f"not attempted: {item['skipped']}" if "skipped" in item else f"refused ({item.get('error')})")
            self.row("egress", f"egress direct: {label}", "no connection", observed, not reached and "skipped" not in item)
        for item in report["proxied"]:
            label = Destination(item["host"], item["port"], item.get("label", "")).text
            status, squid_error = item.get("status"), item.get("squid_error")
            observed = f"{status} {squid_error or ''}".strip() if status is not None else f"no answer ({item.get('error')})"
            if item.get("allowed"):
                ok = status == 200
                self.row("egress-allowed", f"egress allowed: {label}", "reachable through the proxy (CONNECT 200)", observed, ok)
            else:
                self.row("egress", f"egress via proxy: {label}", "refused by the proxy (403)", observed, status == 403)
        if mode == "none":
            port = report.get("proxy_port")
            self.row("egress", "egress: proxy", "none (no egress at all)", "none" if port is None else f"a proxy at 127.0.0.1:{port}", port is None)

    def limits(self, report: Mapping[str, Any]) -> None:
        pids = self.sandbox.resources.pids
        if pids and "pids" in report:
            seen = report["pids"]
            ok = seen.get("error") is not None and seen.get("started", pids + 1) <= pids
            observed = f"{seen.get('started')} more processes started, then {seen.get('error') or 'no refusal'}"
            self.row("pids", "limit: pids", f"fork refused at {pids} processes", observed, ok)
        memory = self.sandbox.resources.memory
        if memory and "memory" in report:
            seen = report["memory"]
            ok = seen.get("error") is not None and seen.get("reserved_mib", memory) * MIB <= memory
            observed = f"{seen.get('reserved_mib')} MiB mapped, then {seen.get('error') or 'no refusal'}"
            self.row("memory", "limit: memory", f"allocation refused before {memory // MIB} MiB", observed, ok)

    def lifetime(self, exit_status: int | None, elapsed: float) -> None:
        lifetime = self.sandbox.lifecycle.max_lifetime
        if lifetime is None:
            return
        expected = f"the run ends at max_lifetime {duration(lifetime)}"
        if self.req.lifetime is None:
            why = f"not checked: max_lifetime {duration(lifetime)} is longer than --lifetime-check-limit {duration(self.options.lifetime_limit)}"
            self.row("lifetime", "lifetime", expected, why, False)
            return
        if exit_status is None:
            self.row("lifetime", "lifetime", expected, f"still running after {elapsed:.0f}s (verify stopped it)", False)
            return
        self.row("lifetime", "lifetime", expected, f"ended after {elapsed:.1f}s, status {exit_status}", exit_status == 143 and elapsed <= lifetime + 10)
