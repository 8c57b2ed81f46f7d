"""Compare a spec's resolved plan with a boundary's, server by server (see docs/boundary.md).

A boundary is a spec file whose values are ceilings. Each server of the spec is held to the
boundary's server of the same name, or else to the boundary's server named ``any-server``.
Both files are resolved first (defaults, presets, built-in defaults), so the comparison is
of what each server gets, never of what the text says.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator

from mcpspec.boundary import egress, refused, runtime, tools
from mcpspec.boundary.excess import Excess as Excess  # re-exported: callers name it from here
from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan, SecretGrant
from mcpspec.rules.facts import approval_mode
from mcpspec.spec.values import Destination
from mcpspec.targets.egress import egress_plan

ANY_SERVER = "any-server"
# Code, slug and what it compares: SARIF and JSON name excesses by these.
KINDS = {
    "BX000": ("no-ceiling", "a server the boundary sets no ceiling for"),
    "BX001": ("egress-excess", "a destination the spec lets a server reach and the boundary does not"),
    "BX002": ("mount-excess", "a mount source or mode outside the boundary's"),
    "BX003": ("secret-excess", "a secret provider or ttl outside the boundary's"),
    "BX004": ("lifecycle-excess", "a lifetime, timeout or mode above the boundary's maximum"),
    "BX005": ("resource-excess", "a resource limit above the boundary's maximum"),
    "BX006": ("process-excess", "a process, package or listener permission the boundary does not give"),
    "BX007": ("approval-excess", "a tool call that runs with less approval than the boundary requires, or an unlisted tool the boundary refuses"),
    "BX008": ("image-excess", "an image from a registry, repository, tag or digest the boundary does not allow"),
    "BX009": ("env-excess", "a host environment variable passed through that the boundary does not pass"),
    "BX010": ("logging-excess", "audit or redaction off, an audit field dropped, or prompts or output logged where the boundary says otherwise"),
    "BX011": ("transport-excess", "a listener, bind address, missing authentication or accepted Origin beyond the boundary's transport"),
    "BX012": ("argument-rule-excess", "a tool call that argument rules let through where the boundary's when rules refuse it or send it to approval"),
    "BX013": ("tool-limit-excess", "a tool's call timeout or rate above the boundary's for that tool"),
}
_APPROVAL = {None: 0, "per-session": 1, "always": 2}
_MODES = {"per-task": 0, "per-session": 1, "long-lived": 2}


def check(spec: Plan, boundary: Plan) -> list[Excess]:
    """Every excess of every server of ``spec`` over ``boundary``."""
    policies: dict[str, egress.Policy] = {}
    opened: refused.OpenLeaks = {}
    found: list[Excess] = []
    for name, sandbox in spec.servers.items():
        ceiling = boundary.servers.get(name) or boundary.servers.get(ANY_SERVER)
        if ceiling is None:
            found.append(Excess("BX000", name, sandbox.path, f"{name}: the boundary sets no ceiling for this server (name it, or give an {ANY_SERVER} server)"))
            continue
        if ceiling.name not in policies:
            # A ceiling that is itself unfiltered (placement: agent, via: direct) allows every destination:
            # the boundary is read as the targets build it, like the spec, so a spec is within itself.
            policies[ceiling.name] = _OPEN if _unfiltered(ceiling) is not None else _policy(ceiling)
        found.extend(_egress(sandbox, ceiling, policies[ceiling.name], opened))
        found.extend(_mounts(sandbox, ceiling))
        found.extend(_workspace(spec, sandbox, boundary))
        found.extend(_secrets(sandbox, ceiling))
        found.extend(_maxima(sandbox, ceiling))
        found.extend(_process(sandbox, ceiling))
        found.extend(_identity(sandbox, ceiling))
        found.extend(_approvals(spec, sandbox, boundary, ceiling))
        found.extend(runtime.images(sandbox, boundary, ceiling))
        found.extend(runtime.env(sandbox, ceiling))
        found.extend(runtime.logging(sandbox, ceiling))
        found.extend(runtime.transport(sandbox, ceiling))
        found.extend(tools.argument_rules(spec, sandbox, boundary, ceiling))
        found.extend(tools.limits(sandbox, ceiling))
    return found


def _policy(sandbox: EffectiveSandbox) -> egress.Policy:
    policy = sandbox.egress
    return egress.policy(policy.default, policy.allow, policy.deny)


def _unfiltered(sandbox: EffectiveSandbox) -> str | None:
    """Why a target gives the server a network its egress entries do not bind, if one does:
    ``via: direct`` with any egress at all (bwrap and compose share the host network, systemd
    filters only addresses), or ``placement: agent`` (k8s puts it in the agent's pod, whose
    network no build of the spec filters). The server may then reach every destination."""
    if sandbox.placement == "agent":
        return "placement"
    return "egress.via" if egress_plan(sandbox).mode == "direct-open" else None


_OPEN = egress.policy("allow", (), ())
_UNFILTERED = {
    "egress.via": "egress.via: direct shares the host network, which filters nothing",
    "placement": "placement: agent puts it in the agent's pod, whose network no build of the spec filters",
}


# --- egress ---


def _egress(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox, limit: egress.Policy, opened: refused.OpenLeaks) -> Iterator[Excess]:
    why = _unfiltered(sandbox)
    if why is not None:
        said = _UNFILTERED[why]
        for leak in egress.leaks(_OPEN, limit)[:1]:
            yield Excess("BX001", sandbox.name, sandbox.origin(why), f"{sandbox.name} may reach {leak.request} ({said}); the boundary allows {_allowed(ceiling, leak)}")
        return
    for leak in refused.leaks(sandbox.egress, limit, opened):
        yield Excess("BX001", sandbox.name, _entry_path(sandbox, leak.entry), f"{sandbox.name} may reach {leak.request}{_via(leak.entry)}; the boundary allows {_allowed(ceiling, leak)}")


def _entry_path(sandbox: EffectiveSandbox, entry: Destination | None) -> SpecPath:
    if entry is None:
        return sandbox.origin("egress.default")
    position = next(i for i, candidate in enumerate(sandbox.egress.allow) if candidate is entry)
    return (*sandbox.origin("egress.allow"), sandbox.egress.index_of("allow", position))


def _via(entry: Destination | None) -> str:
    if entry is None:
        return " (egress.default: allow)"
    return f" (through @{entry.preset})" if entry.preset else f" (through {entry.text})"


def _allowed(ceiling: EffectiveSandbox, leak: egress.Leak) -> str:
    policy = ceiling.egress
    if leak.resolved is not None:
        return f"no name that resolves into {_texts(tuple(d for d in policy.deny if d.kind == 'cidr'))}"
    if policy.default == "allow":
        denied = _texts(policy.deny)
        return "every destination" + (f" but {denied}" if denied else "")
    return _texts(policy.allow) or "no destination"


def _texts(entries: tuple[Destination, ...], most: int = 4) -> str:
    texts = list(dict.fromkeys(f"@{entry.preset}" if entry.preset else entry.text for entry in entries))
    more = f" and {len(texts) - most} more" if len(texts) > most else ""
    return ", ".join(texts[:most]) + more


# --- mounts ---


def _mounts(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    for mount in sandbox.mounts:
        if any(_mount_within(mount, allowed) for allowed in ceiling.mounts):
            continue
        offered = ", ".join(f"{_where(m)} {m.mode}" for m in ceiling.mounts) or "no mount"
        yield Excess("BX002", sandbox.name, mount.origins.get("mode", mount.path), f"{sandbox.name} may mount {_where(mount)} {mount.mode}; the boundary allows {offered}")


def _where(mount: EffectiveMount) -> str:
    if mount.kind == "host":
        return mount.source
    if mount.kind == "home":
        return "~" if mount.source == "." else f"~/{mount.source}"
    return f"workspace.{mount.source}" + (" (tmpfs)" if mount.kind == "tmpfs" else "")


def _mount_within(mount: EffectiveMount, allowed: EffectiveMount) -> bool:
    if mount.kind != allowed.kind or (mount.writable and not allowed.writable):
        return False
    if mount.kind in ("host", "home"):
        return _path_within(mount.source, allowed.source)
    return mount.source == allowed.source and (mount.kind != "tmpfs" or mount.size <= allowed.size)


def _path_within(path: str, root: str) -> bool:
    """Whether normalized ``path`` is ``root`` or below it (``.`` is the home directory itself)."""
    if root in (".", "/"):
        return True
    return path == root or path.startswith(root.rstrip("/") + "/")


_RESETS = {"per-task": 0, "per-session": 1, "never": 2}


def _workspace(spec: Plan, sandbox: EffectiveSandbox, boundary: Plan) -> Iterator[Excess]:
    """Where the workspace dirs a server mounts live on the host, and how long and with whom they
    are shared: the spec's workspace root at or below the boundary's, its own tree per agent
    where the boundary's is, and emptied at least as often (a tmpfs dir is memory: no root)."""
    mine, most = spec.workspace, boundary.workspace
    disk = next((m for m in sandbox.mounts if m.kind == "workspace"), None)
    used = disk or next((m for m in sandbox.mounts if m.kind == "tmpfs"), None)
    if mine is None or most is None or used is None:
        return  # no workspace mount; a boundary without a workspace allows none (see _mounts)
    name = sandbox.name
    if disk is not None and not _root_within(mine.root, most.root):
        yield Excess("BX002", name, ("workspace", "root"), f"{name} may mount {_located(disk)} {disk.mode}; the boundary keeps workspaces under {most.root}")
    if most.per_agent and not mine.per_agent:
        yield Excess("BX002", name, ("workspace", "per_agent"), f"{name} shares workspace.{used.source} between agents (workspace.per_agent false); the boundary gives each agent its own")
    if _RESETS[mine.reset] > _RESETS[most.reset]:
        yield Excess("BX004", name, ("workspace", "reset"), f"{name} keeps the data of workspace.{used.source} (workspace.reset: {mine.reset}); the boundary empties it {most.reset}")


def _root_within(path: str, root: str) -> bool:
    """Normalized host paths as the spec writes them (``/x``, ``~``, ``~/x``): ``path`` at or below ``root``."""
    return root == "/" or path == root or path.startswith(root + "/")


def _located(mount: EffectiveMount) -> str:
    return f"workspace.{mount.source} at {mount.location}"


# --- secrets ---


def _secrets(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    offered = [source for grant in ceiling.secrets for source in grant.every_source()]
    for grant in sandbox.secrets:
        for source in grant.every_source():
            if any(_secret_within(source, allowed) for allowed in offered):
                continue
            listed = ", ".join(dict.fromkeys(f"{_provider(g)} (ttl {_duration(g.ttl)})" for g in offered)) or "no secret"
            yield Excess(
                "BX003", sandbox.name, source.secret_path,
                f"{sandbox.name} may receive secret {grant.name} from {_provider(source)} with ttl {_duration(source.ttl)}; the boundary allows {listed}",
            )


def _provider(grant: SecretGrant) -> str:
    return f"file {grant.source}" if grant.provider == "file" and grant.source is not None else grant.provider


def _secret_within(grant: SecretGrant, allowed: SecretGrant) -> bool:
    """Same provider, ttl at most the boundary's; a file secret is a host file copied into the sandbox,
    so its path is at or below the boundary's (a ``ref`` of any other provider is not compared)."""
    if grant.provider != allowed.provider or not _at_most(grant.ttl, allowed.ttl):
        return False
    if grant.provider != "file":
        return True
    mine, theirs = grant.source, allowed.source
    return mine is not None and theirs is not None and mine.in_home == theirs.in_home and _path_within(mine.path, theirs.path)


# --- maxima ---


def _at_most(value: float | None, ceiling: float | None) -> bool:
    """``None`` is no limit: within any ceiling only when the ceiling is none too."""
    if ceiling is None:
        return True
    return value is not None and value <= ceiling


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "none"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _number(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:g}"


def _size(value: float | None) -> str:
    if value is None:
        return "unlimited"
    for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    return f"{int(value)}B"


_Shown = Callable[[float | None], str]
_FIELDS: tuple[tuple[str, str, Callable[[EffectiveSandbox], float | None], _Shown], ...] = (
    ("BX004", "lifecycle.idle_timeout", lambda s: s.lifecycle.idle_timeout, _duration),
    ("BX004", "lifecycle.max_lifetime", lambda s: s.lifecycle.max_lifetime, _duration),
    ("BX004", "lifecycle.pause.max_paused", lambda s: s.lifecycle.pause.max_paused, _duration),
    ("BX004", "limits.call_timeout", lambda s: s.limits.call_timeout, _duration),
    ("BX004", "process.max_runtime", lambda s: s.process.max_runtime, _duration),
    ("BX004", "process.background.max_runtime", lambda s: s.process.background.max_runtime, _duration),
    ("BX005", "runtime.memory", lambda s: s.resources.memory, _size),
    ("BX005", "runtime.cpus", lambda s: s.resources.cpus, _number),
    ("BX005", "runtime.pids", lambda s: s.resources.pids, _number),
    ("BX005", "limits.requests_per_minute", lambda s: s.limits.requests_per_minute, _number),
    ("BX006", "process.background.max_jobs", lambda s: s.process.background.max_jobs, _number),
)
# A limit that matters only while its permission is given: compared when both files give it (a
# permission the boundary withholds is an excess of its own, below).
_PERMITS: dict[str, tuple[str, Callable[[EffectiveSandbox], bool]]] = {
    "lifecycle.pause.max_paused": ("lifecycle.pause.allowed", lambda s: s.lifecycle.pause.allowed),
    "process.background.max_runtime": ("process.background.allowed", lambda s: s.process.background.allowed),
    "process.background.max_jobs": ("process.background.allowed", lambda s: s.process.background.allowed),
}


def _maxima(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    mode, limit = sandbox.lifecycle.mode, ceiling.lifecycle.mode
    if _MODES[mode] > _MODES[limit]:
        yield Excess("BX004", sandbox.name, sandbox.origin("lifecycle.mode"), f"{sandbox.name} may live {mode}; the boundary allows at most {limit}")
    if sandbox.lifecycle.pause.allowed and not ceiling.lifecycle.pause.allowed:
        yield Excess("BX004", sandbox.name, sandbox.origin("lifecycle.pause.allowed"), f"{sandbox.name} has lifecycle.pause.allowed true; the boundary says false")
    for code, key, read, shown in _FIELDS:
        permit = _PERMITS.get(key)
        if permit is not None and not (permit[1](sandbox) and permit[1](ceiling)):
            continue
        value, most = read(sandbox), read(ceiling)
        if not _at_most(value, most):
            yield Excess(code, sandbox.name, sandbox.origin(key), f"{sandbox.name} has {key} {shown(value)}; the boundary allows at most {shown(most)}")


# --- process and packages ---


def _process(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    mine, most = sandbox.process, ceiling.process
    name = sandbox.name
    if most.allow is not None:
        if mine.allow is None:
            yield Excess("BX006", name, sandbox.origin("process.allow"), f"{name} may spawn any command (no process.allow); the boundary allows only {', '.join(most.allow) or 'none'}")
        else:
            extra = [c for c in mine.allow if c not in mine.deny and (c not in most.allow or _names_any(c, most.deny))]
            if extra:
                yield Excess("BX006", name, sandbox.origin("process.allow"), f"{name} may spawn {extra[0]}; the boundary allows only {', '.join(c for c in most.allow if not _names_any(c, most.deny)) or 'none'}")
    # No target enforces process.allow (bwrap and systemd hide only what process.deny names), so
    # every program the boundary denies is one the server may spawn unless the spec denies it too.
    missing = [c for c in most.deny if c not in mine.deny]
    if missing:
        denied = missing[0]
        named = next((c for c in (*(mine.allow or ()), *sandbox.command[:1]) if _names_any(c, (denied,))), None)
        shown = named or denied
        why = "" if mine.allow is None or named is not None else " (process.allow is not enforced by any target: only process.deny hides a program)"
        yield Excess("BX006", name, sandbox.origin("process.deny"), f"{name} may spawn {shown}, which the boundary denies" + (f" ({denied})" if shown != denied else "") + why)
    for key, allowed, limit in (("process.listeners", mine.listeners, most.listeners), ("process.package_install.allowed", mine.package_install.allowed, most.package_install.allowed), ("process.background.allowed", mine.background.allowed, most.background.allowed)):
        if allowed and not limit:
            yield Excess("BX006", name, sandbox.origin(key), f"{name} has {key} true; the boundary says false")
    install, limit_install = mine.package_install, most.package_install
    if install.allowed and limit_install.allowed:
        extra = [r for r in install.registries if r not in limit_install.registries]
        if extra:
            yield Excess("BX006", name, sandbox.origin("process.package_install.registries"), f"{name} may install from {extra[0]}; the boundary allows {', '.join(limit_install.registries) or 'no registry'}")
        if install.lockfile == "optional" and limit_install.lockfile == "required":
            yield Excess("BX006", name, sandbox.origin("process.package_install.lockfile"), f"{name} may install without a lockfile; the boundary requires one")


def _identity(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    """Who the server runs as: a root launcher runs bwrap as this uid and gid on the host (0 as
    65532) and the containers as themselves, so another identity reaches the files and processes
    the boundary's does not; and a writable root where the boundary's is read-only."""
    mine, theirs = sandbox.identity, ceiling.identity
    for key, value, limit in (("runtime.user", mine.uid, theirs.uid), ("runtime.group", mine.gid, theirs.gid)):
        if value != limit:
            yield Excess("BX006", sandbox.name, sandbox.origin(key), f"{sandbox.name} runs with {key} {value}; the boundary runs servers as {limit}")
    if not sandbox.read_only_root and ceiling.read_only_root:
        yield Excess("BX006", sandbox.name, sandbox.origin("runtime.read_only_root"), f"{sandbox.name} may write its root filesystem (runtime.read_only_root false); the boundary says true")


def _names_any(command: str, commands: tuple[str, ...]) -> bool:
    """Whether ``commands`` holds ``command`` under either of its names: the targets find a plain name
    in the PATH directories, so ``curl`` and ``/usr/bin/curl`` are one program (compared by base name;
    a spec deny must still name a boundary deny exactly to cover it)."""
    base = posixpath.basename(command)
    return any(posixpath.basename(other) == base for other in commands)


# --- approvals ---


def _approvals(spec: Plan, sandbox: EffectiveSandbox, boundary: Plan, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    """Approval minima: a call of a tool with an effect the boundary's ``approvals.require`` lists is
    approved every time; a tool the boundary's ceiling names is approved at least as often as there."""
    name = sandbox.name
    if sandbox.unlisted_tools == "allow" and ceiling.unlisted_tools == "deny":
        yield Excess("BX007", name, sandbox.origin("unlisted_tools"), f"{name} lets a client call tools the spec does not list; the boundary refuses them (unlisted_tools: deny)")
    for tool_name, tool in sandbox.tools.items():
        mode = approval_mode(spec, tool)
        where = (*sandbox.path, "tools", tool_name, "approval" if tool.approval is not None else "effects")
        # Undeclared effects (HR004) may be any effect: each one the boundary requires approval of.
        effects = tool.effects or boundary.approvals.require
        required = [effect for effect in effects if effect in boundary.approvals.require]
        if required and mode != "always":
            asked = "once per session" if mode == "per-session" else "without approval"
            declared = required[0] if tool.effects else f"effects undeclared, so possibly {required[0]}"
            yield Excess("BX007", name, where, f"{name} may run {tool_name} ({declared}) {asked}; the boundary requires approval of every {required[0]} call")
            continue
        own = ceiling.tools.get(tool_name)
        least = approval_mode(boundary, own) if own is not None else None
        if _APPROVAL[mode] < _APPROVAL[least]:
            yield Excess("BX007", name, where, f"{name} may run {tool_name} with approval {mode or 'never'}; the boundary requires {least}")
