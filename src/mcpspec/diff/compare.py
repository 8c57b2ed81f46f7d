"""Compare two resolved Plans server by server: every privilege a server gained or lost.

Each comparison reads the Plan's final values (defaults applied, anchors followed), so the
way a spec is written (key order, anchors, a value moved into ``defaults``) never shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mcpspec.diff.model import PROJECT, Change, Effect
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan, SecretGrant
from mcpspec.rules.facts import approval_mode
from mcpspec.spec.models import HttpTransport, StdioTransport, Tool, Workspace

# Placement, from farthest from the agent to closest.
PLACEMENT_ORDER = ("external", "dedicated", "agent")
PLACEMENT_WORDS = {"external": "outside (external)", "dedicated": "a dedicated sandbox", "agent": "the agent's sandbox"}
LIFECYCLE_ORDER = ("per-task", "per-session", "long-lived")
INHERIT_ORDER = ("none", "minimal", "all")
TRUST_ORDER = ("third-party", "vetted", "first-party")
APPROVAL_ORDER = (None, "per-session", "always")  # from fewest approvals to most


def compare_plans(old: Plan, new: Plan) -> list[Change]:
    """Every change from ``old`` to ``new``: servers, agents, approvals and each server's privileges."""
    changes: list[Change] = []
    for name in sorted(old.servers.keys() - new.servers.keys()):
        changes.append(Change(name, "server", "shrank", f"server {name} removed", _summary(old.servers[name]), None))
    for name in sorted(new.servers.keys() - old.servers.keys()):
        changes.append(Change(name, "server", "grew", f"new server {name}: {_summary(new.servers[name])}", None, _summary(new.servers[name])))
    for name in sorted(old.servers.keys() & new.servers.keys()):
        changes += compare_servers(old, new, old.servers[name], new.servers[name])
    changes += _agents(old, new)
    changes += _project(old, new)
    return changes


def _summary(server: EffectiveSandbox) -> str:
    egress = "open egress" if server.egress.default == "allow" else f"egress to {_count(len(server.egress.allow), 'destination')}"
    rw = sum(1 for m in server.mounts if m.writable)
    return (
        f"placement {server.placement}, {egress}, {_count(len(server.secrets), 'secret')}, "
        f"{_count(len(server.mounts), 'mount')} ({rw} rw), {_count(len(server.tools), 'tool')}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def compare_servers(old_plan: Plan, new_plan: Plan, old: EffectiveSandbox, new: EffectiveSandbox) -> list[Change]:
    """The changes of one server present in both versions."""
    found = Found(new.name)
    _placement(found, old, new)
    found.ordered("trust", "trust", old.trust, new.trust, TRUST_ORDER)
    _runtime(found, old, new)
    _env(found, old, new)
    _egress(found, old, new)
    _secrets(found, old.secrets, new.secrets)
    _mounts(found, old.mounts, new.mounts)
    _process(found, old, new)
    _lifecycle(found, old, new)
    _limits(found, old, new)
    _logging(found, old, new)
    _tools(found, old_plan, new_plan, old, new)
    return found.changes


class Found:
    """Collects the changes of one server, with helpers for the usual shapes of comparison."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.changes: list[Change] = []

    def add(self, category: str, effect: Effect, message: str, old: object = None, new: object = None) -> None:
        self.changes.append(Change(self.server, category, effect, message, _plain(old), _plain(new)))

    def flag(self, category: str, what: str, old: bool, new: bool, granting: bool = True) -> None:
        """A boolean switch; ``granting`` says whether turning it on grants more."""
        if old == new:
            return
        grew = new if granting else old
        self.add(category, "grew" if grew else "shrank", f"{what} turned {'on' if new else 'off'}", old, new)

    def ordered(self, category: str, what: str, old: str | None, new: str | None, order: Sequence[str | None]) -> None:
        """A value on a scale from least to most granted."""
        if old == new:
            return
        effect: Effect = "grew" if order.index(new) > order.index(old) else "shrank"
        self.add(category, effect, f"{what} {_show(old)} -> {_show(new)}", old, new)

    def limit(self, category: str, what: str, old: float | None, new: float | None, unit: str = "", unset: str = "unlimited") -> None:
        """A limit where None means none (``unset`` says it): a higher or removed limit grew."""
        if old == new:
            return
        if old is None or (new is not None and new < old):
            effect: Effect = "shrank"
        else:
            effect = "grew"
        self.add(category, effect, f"{what} {_limit(old, unit, unset)} -> {_limit(new, unit, unset)}", old, new)

    def members(self, category: str, what: str, old: Iterable[str], new: Iterable[str], added: Effect, removed: Effect) -> None:
        """A set of names: each one added or removed is a change of its own."""
        before, after = set(old), set(new)
        for item in sorted(after - before):
            self.add(category, added, f"{what} {item} added", None, item)
        for item in sorted(before - after):
            self.add(category, removed, f"{what} {item} removed", item, None)

    def neutral(self, category: str, what: str, old: object, new: object) -> None:
        if old != new:
            self.add(category, "neutral", f"{what} changed: {_show(old)} -> {_show(new)}", old, new)


def _plain(value: object) -> object:
    """A value a Change can hold (hashable) and json can write."""
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(item) for item in value]
        return tuple(sorted(items, key=str) if isinstance(value, set | frozenset) else items)
    if isinstance(value, Mapping):
        return tuple((str(k), _plain(v)) for k, v in sorted(value.items()))
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _show(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_SIZES = (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024))
_DURATIONS = (("d", 86400), ("h", 3600), ("m", 60))


def _limit(value: float | None, unit: str, unset: str = "unlimited") -> str:
    """A limit as a spec writes it: ``unlimited``, ``512Mi``, ``4h``, ``30s``, ``60``."""
    if value is None:
        return unset
    scale = _SIZES if unit == "bytes" else _DURATIONS if unit == "s" else ()
    for suffix, size in scale:
        if value >= size and value % size == 0:
            return f"{int(value // size)}{suffix}"
    number = str(int(value)) if float(value).is_integer() else str(value)
    if unit == "bytes":
        return f"{number} bytes"
    return f"{number}{unit}"


def _placement(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    if old.placement == new.placement:
        return
    closer = PLACEMENT_ORDER.index(new.placement) > PLACEMENT_ORDER.index(old.placement)
    direction = "closer to" if closer else "farther from"
    found.add(
        "placement", "grew" if closer else "shrank",
        f"placement moved {direction} the agent: {PLACEMENT_WORDS[old.placement]} -> {PLACEMENT_WORDS[new.placement]}",
        old.placement, new.placement,
    )


def _runtime(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    found.neutral("runtime", "command", list(old.command), list(new.command))
    found.neutral("runtime", "image", old.image, new.image)
    found.neutral("runtime", "package", None if old.package is None else old.package.model_dump(mode="json"), None if new.package is None else new.package.model_dump(mode="json"))
    _transport(found, old.transport, new.transport)
    found.neutral("runtime", "workdir", old.workdir, new.workdir)
    found.flag("runtime", "command run by a shell", old.command_is_shell, new.command_is_shell)
    found.flag("runtime", "read-only root", old.read_only_root, new.read_only_root, granting=False)
    if old.identity != new.identity:
        root_before, root_after = old.identity.uid == 0, new.identity.uid == 0
        effect: Effect = "grew" if root_after and not root_before else "shrank" if root_before and not root_after else "neutral"
        found.add("identity", effect, f"runs as uid:gid {old.identity.uid}:{old.identity.gid} -> {new.identity.uid}:{new.identity.gid}",
                  f"{old.identity.uid}:{old.identity.gid}", f"{new.identity.uid}:{new.identity.gid}")
    found.limit("resources", "memory limit", old.resources.memory, new.resources.memory, "bytes")
    found.limit("resources", "CPU limit", old.resources.cpus, new.resources.cpus, " CPUs")
    found.limit("resources", "process limit", old.resources.pids, new.resources.pids, " processes")


def _transport(found: Found, old: StdioTransport | HttpTransport, new: StdioTransport | HttpTransport) -> None:
    """The transport: who can call the server over HTTP is a privilege; the rest is neutral."""
    if not isinstance(old, HttpTransport) or not isinstance(new, HttpTransport):
        found.neutral("transport", "transport", old.type, new.type)
        return
    found.neutral("transport", "transport", old.type, new.type)
    found.neutral("transport", "url", old.url, new.url)
    found.neutral("transport", "port", old.port, new.port)
    before, after = _auth(old), _auth(new)
    if before != after:
        effect: Effect = "grew" if after == "none" else "shrank" if before == "none" else "neutral"
        found.add("transport", effect, f"HTTP authentication {before} -> {after}", before, after)
    loopback_before, loopback_after = _loopback(old.bind), _loopback(new.bind)
    if old.bind != new.bind:
        effect = "grew" if loopback_before and not loopback_after else "shrank" if loopback_after and not loopback_before else "neutral"
        found.add("transport", effect, f"listens on {old.bind or '127.0.0.1'} -> {new.bind or '127.0.0.1'}", old.bind, new.bind)
    if old.allowed_origins != new.allowed_origins:
        if old.allowed_origins is None or new.allowed_origins is None:
            unchecked = new.allowed_origins is None
            found.add("transport", "grew" if unchecked else "shrank", "Origin header no longer checked" if unchecked else "Origin header checked",
                      old.allowed_origins, new.allowed_origins)
        else:
            found.members("transport", "allowed origin", old.allowed_origins, new.allowed_origins, "grew", "shrank")


def _auth(transport: HttpTransport) -> str:
    return "none" if transport.auth is None else transport.auth.type


def _loopback(bind: str | None) -> bool:
    return bind is None or bind in ("localhost", "::1") or bind.startswith("127.")


def _env(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    before, after = old.env.inherit, new.env.inherit
    if before != after:
        if isinstance(before, str) and isinstance(after, str):
            found.ordered("env", "environment inherited", before, after, INHERIT_ORDER)
        elif isinstance(before, tuple) and isinstance(after, tuple):
            found.members("env", "inherited variable", before, after, "grew", "shrank")
        else:
            # a list of names against none/minimal/all: "all" passes more than any list, "none" less
            listed = after if isinstance(after, tuple) else before
            word = before if isinstance(before, str) else after
            assert isinstance(word, str) and isinstance(listed, tuple)
            wider_is_new = (word == "all") == isinstance(after, str)
            effect: Effect = "grew" if wider_is_new else "shrank"
            if word == "minimal":
                effect = "neutral"
            found.add("env", effect, f"environment inherited {_show(before)} -> {_show(after)}", before, after)
    for key in sorted(old.env.set.keys() | new.env.set.keys()):
        if key not in old.env.set:
            found.add("env", "neutral", f"environment variable {key} set", None, key)
        elif key not in new.env.set:
            found.add("env", "neutral", f"environment variable {key} no longer set", key, None)
        elif old.env.set[key] != new.env.set[key]:
            found.add("env", "neutral", f"environment variable {key} changed value", key, key)


def _egress(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    found.ordered("egress", "egress default", old.egress.default, new.egress.default, ("deny", "allow"))
    if old.egress.via != new.egress.via:
        effect: Effect = "grew" if new.egress.via == "direct" else "shrank"
        found.add("egress", effect, f"egress goes {'direct (no proxy)' if new.egress.via == 'direct' else 'through the proxy'} instead of {old.egress.via}", old.egress.via, new.egress.via)
    found.members("egress", "egress to", (str(d) for d in old.egress.allow), (str(d) for d in new.egress.allow), "grew", "shrank")
    found.members("egress", "egress deny of", (str(d) for d in old.egress.deny), (str(d) for d in new.egress.deny), "shrank", "grew")


def _secrets(found: Found, old: Sequence[SecretGrant], new: Sequence[SecretGrant]) -> None:
    before = {grant.name: grant for grant in old}
    after = {grant.name: grant for grant in new}
    for name in sorted(after.keys() - before.keys()):
        grant = after[name]
        scopes = f" (scopes {_show(list(grant.scopes))})" if grant.scopes else ""
        found.add("secrets", "grew", f"secret {name} granted{scopes}", None, name)
    for name in sorted(before.keys() - after.keys()):
        found.add("secrets", "shrank", f"secret {name} revoked", name, None)
    for name in sorted(before.keys() & after.keys()):
        a, b = before[name], after[name]
        for scope in sorted(set(b.scopes) - set(a.scopes)):
            found.add("secrets", "grew", f"secret {name} scope widened: {scope} added", list(a.scopes), list(b.scopes))
        for scope in sorted(set(a.scopes) - set(b.scopes)):
            found.add("secrets", "shrank", f"secret {name} scope narrowed: {scope} removed", list(a.scopes), list(b.scopes))
        found.limit("secrets", f"secret {name} ttl", a.ttl, b.ttl, "s")
        found.neutral("secrets", f"secret {name} source", f"{a.provider}:{a.ref}", f"{b.provider}:{b.ref}")
        for target in sorted(a.sources.keys() | b.sources.keys()):  # a target that reads a source of its own, before or after
            x, y = a.for_target(target), b.for_target(target)
            found.neutral("secrets", f"secret {name} source for {target}", f"{x.provider}:{x.ref}", f"{y.provider}:{y.ref}")
        found.neutral("secrets", f"secret {name} form", _form(a), _form(b))


def _form(grant: SecretGrant) -> str:
    return f"env {grant.env}" if grant.env is not None else f"file {grant.file}"


def _mount_key(mount: EffectiveMount) -> tuple[str, str, str]:
    """A workspace dir by its name (the workspace's root is compared once, for the project)."""
    return (mount.kind, mount.location if mount.kind in ("host", "home") else mount.source, mount.target)


def _mount_name(mount: EffectiveMount) -> str:
    source = mount.location if mount.kind in ("host", "home") else f"{mount.kind} {mount.source}"
    return f"{source} at {mount.target}"


def _mounts(found: Found, old: Sequence[EffectiveMount], new: Sequence[EffectiveMount]) -> None:
    before = {_mount_key(m): m for m in old}
    after = {_mount_key(m): m for m in new}
    for key in sorted(after.keys() - before.keys()):
        mount = after[key]
        found.add("mounts", "grew", f"mount {_mount_name(mount)} added ({mount.mode})", None, f"{_mount_name(mount)} {mount.mode}")
    for key in sorted(before.keys() - after.keys()):
        mount = before[key]
        found.add("mounts", "shrank", f"mount {_mount_name(mount)} removed", f"{_mount_name(mount)} {mount.mode}", None)
    for key in sorted(before.keys() & after.keys()):
        a, b = before[key], after[key]
        if a.mode != b.mode:
            found.add("mounts", "grew" if b.writable else "shrank", f"mount {_mount_name(b)} turned {b.mode}", a.mode, b.mode)
        if a.tmpfs and b.tmpfs:
            found.limit("mounts", f"size of {_mount_name(b)}", a.size, b.size, "bytes")


def _process(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    a, b = old.process, new.process
    if a.allow != b.allow:
        if a.allow is None or b.allow is None:
            grew = b.allow is None
            found.add("process", "grew" if grew else "shrank",
                      "command allowlist removed: any command may run" if grew else f"command allowlist set: {_show(list(b.allow or ()))}",
                      None if a.allow is None else list(a.allow), None if b.allow is None else list(b.allow))
        else:
            found.members("process", "allowed command", a.allow, b.allow, "grew", "shrank")
    found.members("process", "denied command", a.deny, b.deny, "shrank", "grew")
    found.flag("process", "package install", a.package_install.allowed, b.package_install.allowed)
    found.members("process", "package registry", a.package_install.registries, b.package_install.registries, "grew", "shrank")
    found.ordered("process", "package lockfile", a.package_install.lockfile, b.package_install.lockfile, ("required", "optional"))
    found.flag("process", "listeners", a.listeners, b.listeners)
    found.flag("process", "background jobs", a.background.allowed, b.background.allowed)
    found.limit("process", "background job limit", a.background.max_jobs, b.background.max_jobs, " jobs")
    found.limit("process", "background job runtime", a.background.max_runtime, b.background.max_runtime, "s")
    found.limit("process", "command runtime", a.max_runtime, b.max_runtime, "s")


def _lifecycle(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    a, b = old.lifecycle, new.lifecycle
    found.ordered("lifecycle", "lifecycle mode", a.mode, b.mode, LIFECYCLE_ORDER)
    found.limit("lifecycle", "idle timeout", a.idle_timeout, b.idle_timeout, "s")
    found.limit("lifecycle", "max lifetime", a.max_lifetime, b.max_lifetime, "s")
    found.flag("lifecycle", "pause", a.pause.allowed, b.pause.allowed)
    found.limit("lifecycle", "max paused", a.pause.max_paused, b.pause.max_paused, "s")
    found.flag("lifecycle", "teardown kills processes", a.teardown.kill_processes, b.teardown.kill_processes, granting=False)
    found.flag("lifecycle", "teardown removes the workspace", a.teardown.remove_workspace, b.teardown.remove_workspace, granting=False)
    found.flag("lifecycle", "teardown revokes secrets", a.teardown.revoke_secrets, b.teardown.revoke_secrets, granting=False)
    found.ordered("lifecycle", "teardown copy_out", a.teardown.copy_out, b.teardown.copy_out, ("none", "artifacts"))
    found.neutral("lifecycle", "template", a.template, b.template)
    found.neutral("lifecycle", "snapshot", a.snapshot, b.snapshot)


def _limits(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    found.limit("limits", "requests per minute", old.limits.requests_per_minute, new.limits.requests_per_minute)
    found.limit("limits", "call timeout", old.limits.call_timeout, new.limits.call_timeout, "s")


def _logging(found: Found, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    a, b = old.logging, new.logging
    found.flag("logging", "audit log", a.audit, b.audit, granting=False)
    found.flag("logging", "redaction", a.redact, b.redact, granting=False)
    found.members("logging", "audit field", a.record, b.record, "shrank", "grew")
    found.flag("logging", "raw prompts in the log", a.raw_prompts, b.raw_prompts)
    found.flag("logging", "full output in the log", a.full_output, b.full_output)
    found.neutral("logging", "audit sink", str(a.sink), str(b.sink))


def _tools(found: Found, old_plan: Plan, new_plan: Plan, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    found.ordered("tools", "unlisted tools", old.unlisted_tools, new.unlisted_tools, ("deny", "allow"))
    for name in sorted(new.tools.keys() - old.tools.keys()):
        tool = new.tools[name]
        effects = f" (effects {_show(list(tool.effects))})" if tool.effects else ""
        gate = approval_mode(new_plan, tool)
        found.add("tools", "grew", f"tool {name} added{effects}, approval {gate or 'never'}", None, name)
    for name in sorted(old.tools.keys() - new.tools.keys()):
        found.add("tools", "shrank", f"tool {name} removed", name, None)
    for name in sorted(old.tools.keys() & new.tools.keys()):
        _tool(found, name, old_plan, new_plan, old.tools[name], new.tools[name], old, new)


def _tool(found: Found, name: str, old_plan: Plan, new_plan: Plan, a: Tool, b: Tool, old: EffectiveSandbox, new: EffectiveSandbox) -> None:
    found.members("tools", f"tool {name} effect", (str(e) for e in a.effects), (str(e) for e in b.effects), "grew", "shrank")
    before, after = approval_mode(old_plan, a), approval_mode(new_plan, b)
    if before != after:
        fewer = APPROVAL_ORDER.index(after) < APPROVAL_ORDER.index(before)
        what = "approval removed" if after is None else "approval relaxed" if fewer else "approval added" if before is None else "approval tightened"
        found.add("approvals", "grew" if fewer else "shrank", f"tool {name}: {what} ({before or 'never'} -> {after or 'never'})", before, after)
    la, lb = old.tool_limits(name), new.tool_limits(name)
    # A tool's own rate (None: only the server's applies); its timeout when either version sets its own
    # (one it inherits changes with the server's, reported once there).
    found.limit("limits", f"tool {name} requests per minute", la.requests_per_minute, lb.requests_per_minute, unset="the server's only")
    own = [tool.limits.call_timeout for tool in (a, b) if tool.limits is not None and tool.limits.call_timeout is not None]
    if own:
        found.limit("limits", f"tool {name} call timeout", la.call_timeout, lb.call_timeout, "s")


def _agents(old: Plan, new: Plan) -> list[Change]:
    changes: list[Change] = []
    for agent in sorted(new.agents.keys() - old.agents.keys()):
        members = list(new.agents[agent])
        changes.append(Change(PROJECT, "agents", "grew", f"new agent {agent} with servers {_show(members)}", None, tuple(members)))
    for agent in sorted(old.agents.keys() - new.agents.keys()):
        changes.append(Change(PROJECT, "agents", "shrank", f"agent {agent} removed", tuple(old.agents[agent]), None))
    for agent in sorted(old.agents.keys() & new.agents.keys()):
        before, after = set(old.agents[agent]), set(new.agents[agent])
        for server in sorted(after - before):
            changes.append(Change(server, "agents", "grew", f"server {server} joins agent {agent}", None, agent))
        for server in sorted(before - after):
            changes.append(Change(server, "agents", "shrank", f"server {server} leaves agent {agent}", agent, None))
    return changes


def _project(old: Plan, new: Plan) -> list[Change]:
    found = Found(PROJECT)
    found.members("approvals", "approvals.require of effect", (str(e) for e in old.approvals.require), (str(e) for e in new.approvals.require), "shrank", "grew")
    found.flag("approvals", "showing the arguments to the approver", old.approvals.show_arguments, new.approvals.show_arguments, granting=False)
    _workspace(found, old.workspace, new.workspace)
    found.members("waivers", "waiver", (_waiver(w) for w in old.waivers), (_waiver(w) for w in new.waivers), "grew", "shrank")
    return found.changes


def _workspace(found: Found, old: Workspace | None, new: Workspace | None) -> None:
    if old is None or new is None:
        if old != new:
            found.add("workspace", "neutral", f"workspace {'added' if new is not None else 'removed'}", None if old is None else str(old.root), None if new is None else str(new.root))
        return
    found.neutral("workspace", "workspace root", str(old.root), str(new.root))
    found.flag("workspace", "a workspace per agent", old.per_agent, new.per_agent, granting=False)
    found.ordered("workspace", "workspace reset", old.reset, new.reset, ("per-task", "per-session", "never"))
    found.members("workspace", "artifact pattern", old.artifacts, new.artifacts, "grew", "shrank")


def _waiver(waiver: object) -> str:
    rule, at, expires = (getattr(waiver, key) for key in ("rule", "at", "expires"))
    return f"{rule} at {at} (until {expires})"

