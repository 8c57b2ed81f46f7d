"""The Plan: one fully resolved, target-neutral EffectiveSandbox per server.

Rules, targets and reports read only this. Every value is final (defaults
applied, references followed, egress entries and the audit sink parsed, paths
normalized, ``~`` read once): no reader applies a default again. A field is
``None`` only where that is a meaning of its own, documented on its type
(unlimited memory, no max_lifetime, no process policy).

Every value remembers the spec path that set it (``EffectiveSandbox.origins``,
keyed by the spec's dotted key such as ``runtime.user``; ``EffectiveMount.origins``
for a mount's mode and size), so a finding about it can point at the right line,
including a line in ``defaults``, and ``mcpspec plan`` can print where each value
came from. A key missing from ``origins`` is a built-in default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcpspec.diagnostics import SpecPath
from mcpspec.perf import quick_init
from mcpspec.revisions import RELAYED
from mcpspec.source.sourcemap import SourceMap
from mcpspec.spec.models import (
    Approvals,
    HttpTransport,
    Package,
    Spec,
    StdioTransport,
    Tool,
    Waiver,
    Workspace,
)
from mcpspec.spec.values import Destination

AGENT_TOKEN = "{agent}"
RUN_TOKEN = "{run_id}"
HOME = "~"


@quick_init
@dataclass(frozen=True, slots=True)
class HostPath:
    """A host path: absolute, or relative to the invoking user's home (``in_home``).

    ``path`` is absolute, or relative to home (``.`` for the home directory itself):
    the one place that reads the spec's ``~`` is :func:`host_path`.
    """

    path: str
    in_home: bool

    def __str__(self) -> str:
        """The path as a spec writes it: ``/srv/data``, ``~`` or ``~/notes``."""
        if not self.in_home:
            return self.path
        return HOME if self.path == "." else f"{HOME}/{self.path}"


def host_path(normalized: str) -> HostPath:
    """Read a normalized host path (``/x``, ``~`` or ``~/x``) of the spec."""
    if normalized == HOME or normalized.startswith(HOME + "/"):
        return HostPath(normalized[2:] or ".", True)
    return HostPath(normalized, False)


@quick_init
@dataclass(frozen=True, slots=True)
class EffectiveMount:
    """A mount as a target must create it.

    ``kind`` says what ``source`` is:

    - ``host``: an absolute host path;
    - ``home``: a path relative to the invoking user's home (``.`` for home itself);
    - ``workspace``: the name of a workspace dir, on disk under the run's directory;
    - ``tmpfs``: the name of a tmpfs workspace dir, fresh memory of ``size`` bytes.

    ``location`` is where the mount lives on the host, as rules compare paths: the
    host path (``~/...`` under home), or for workspace dirs a template holding
    ``{agent}`` and ``{run_id}``, filled in per run by the target. ``origins`` maps
    ``mode`` and ``size`` to the spec path that set them (absent: built-in default).
    """

    kind: Literal["host", "home", "workspace", "tmpfs"]
    source: str
    target: str
    mode: Literal["ro", "rw"]
    path: SpecPath
    location: str
    size: int = 0
    origins: Mapping[str, SpecPath] = field(default_factory=dict)

    @property
    def writable(self) -> bool:
        return self.mode == "rw"

    @property
    def tmpfs(self) -> bool:
        return self.kind == "tmpfs"

    @property
    def workspace_dir(self) -> str | None:
        """The workspace dir's name, for a workspace or tmpfs mount."""
        return self.source if self.kind in ("workspace", "tmpfs") else None

    @property
    def size_set(self) -> bool:
        """Whether the spec limits this tmpfs dir (otherwise ``size`` is the built-in one)."""
        return "size" in self.origins


# --- server sections: every field final, ``None`` only where it means something ---


@quick_init
@dataclass(frozen=True, slots=True)
class Identity:
    """Who the server's process is inside the sandbox."""

    uid: int
    gid: int


@quick_init
@dataclass(frozen=True, slots=True)
class Resources:
    """Resource limits; ``None`` means unlimited (the spec wrote ``null``)."""

    memory: int | None  # bytes
    cpus: float | None
    pids: int | None


@quick_init
@dataclass(frozen=True, slots=True)
class EnvPlan:
    """The environment: host variables passed through, and literal values."""

    inherit: Literal["none", "minimal", "all"] | tuple[str, ...]
    set: Mapping[str, str]


@quick_init
@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Where the server may connect; entries parsed, presets (``@metadata``) expanded.

    ``allow_at`` and ``deny_at`` give, for each entry, the index of the spec's list
    item it came from (all the entries of one preset share its item); empty means
    one entry per item.
    """

    default: Literal["deny", "allow"]
    via: Literal["proxy", "direct"]
    allow: tuple[Destination, ...]
    deny: tuple[Destination, ...]
    # Bookkeeping, not policy: `mcpspec plan` leaves them out (metadata "internal").
    allow_at: tuple[int, ...] = field(default=(), metadata={"internal": True})
    deny_at: tuple[int, ...] = field(default=(), metadata={"internal": True})

    def written(self, which: Literal["allow", "deny"]) -> list[tuple[int, tuple[Destination, ...]]]:
        """(index in the spec's list, the entries it stands for): one item per entry the spec wrote."""
        entries = self.allow if which == "allow" else self.deny
        at = (self.allow_at if which == "allow" else self.deny_at) or tuple(range(len(entries)))
        items: dict[int, list[Destination]] = {}
        for index, entry in zip(at, entries, strict=True):
            items.setdefault(index, []).append(entry)
        return [(index, tuple(group)) for index, group in items.items()]

    def index_of(self, which: Literal["allow", "deny"], position: int) -> int:
        """The spec list index of the entry at ``position`` of ``allow`` or ``deny``."""
        at = self.allow_at if which == "allow" else self.deny_at
        return at[position] if at else position


@quick_init
@dataclass(frozen=True, slots=True)
class InstallPolicy:
    """Run-time package installation; ``cache`` None: no cache location given."""

    allowed: bool
    registries: tuple[str, ...]
    lockfile: Literal["required", "optional"]
    cache: str | None


@quick_init
@dataclass(frozen=True, slots=True)
class BackgroundPolicy:
    """Background jobs; ``None`` limits mean unbounded."""

    allowed: bool
    max_jobs: int | None
    max_runtime: float | None


@quick_init
@dataclass(frozen=True, slots=True)
class ProcessPolicy:
    """What the server may spawn. ``allow`` None: no process policy (anything);
    ``max_runtime`` None: no limit."""

    allow: tuple[str, ...] | None
    deny: tuple[str, ...]
    package_install: InstallPolicy
    listeners: bool
    background: BackgroundPolicy
    max_runtime: float | None


@quick_init
@dataclass(frozen=True, slots=True)
class PausePolicy:
    allowed: bool
    max_paused: float | None  # seconds; None: no limit


@quick_init
@dataclass(frozen=True, slots=True)
class TeardownPolicy:
    kill_processes: bool
    remove_workspace: bool
    revoke_secrets: bool
    copy_out: Literal["artifacts", "none"]


@quick_init
@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    """How long a sandbox lives. Durations in seconds; ``None`` means no limit
    (``idle_timeout``, ``max_lifetime``) or nothing given (``template``, ``snapshot``)."""

    mode: Literal["per-task", "per-session", "long-lived"]
    idle_timeout: float | None
    max_lifetime: float | None
    pause: PausePolicy
    template: str | None
    snapshot: str | None
    teardown: TeardownPolicy


@quick_init
@dataclass(frozen=True, slots=True)
class LogSink:
    """Where audit lines go: ``stderr``, ``journal`` or a ``file`` at ``path``."""

    kind: Literal["stderr", "journal", "file"]
    path: HostPath | None = None

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else self.kind


@quick_init
@dataclass(frozen=True, slots=True)
class LoggingPolicy:
    audit: bool
    record: tuple[str, ...]
    redact: bool
    raw_prompts: bool
    full_output: bool
    sink: LogSink


@quick_init
@dataclass(frozen=True, slots=True)
class CallLimits:
    """Limits on tool calls; ``None`` means no limit."""

    requests_per_minute: int | None
    call_timeout: float | None


@quick_init
@dataclass(frozen=True, slots=True)
class SecretSource:
    """Where one target reads a secret: ``path`` is the spec's ``secrets.NAME.sources.TARGET``."""

    provider: str
    ref: str
    path: SpecPath
    source: HostPath | None = None  # provider file: where the value is read


@quick_init
@dataclass(frozen=True, slots=True)
class SecretGrant:
    """A secret handed to one server, and the one form it takes inside.

    ``provider``, ``ref`` and ``source`` are the default source, written at ``secret_path``;
    ``sources`` holds the targets that read it elsewhere. A build sees only its own target's
    (:meth:`for_target`), so a target never reads another's source.
    """

    name: str
    provider: str
    ref: str
    scopes: tuple[str, ...]
    ttl: float | None
    env: str | None
    file: str | None
    path: SpecPath
    secret_path: SpecPath
    source: HostPath | None = None  # provider file: where the value is read
    sources: Mapping[str, SecretSource] = field(default_factory=dict)

    def for_target(self, target: str) -> SecretGrant:
        """This grant as ``target`` reads it, with no other target's source left in it: its own source
        when the spec names one, else the default."""
        if not self.sources:
            return self
        own = self.sources.get(target)
        if own is None:
            return self._reading(self.provider, self.ref, self.secret_path, self.source)
        return self._reading(own.provider, own.ref, own.path, own.source)

    def every_source(self) -> tuple[SecretGrant, ...]:
        """The grant once per source the spec writes (the default first), for rules that check each."""
        default = self._reading(self.provider, self.ref, self.secret_path, self.source)
        return (default, *(self.for_target(target) for target in self.sources))

    def _reading(self, provider: str, ref: str, secret_path: SpecPath, source: HostPath | None) -> SecretGrant:
        return SecretGrant(self.name, provider, ref, self.scopes, self.ttl, self.env, self.file, self.path, secret_path, source)



@quick_init
@dataclass(frozen=True, slots=True)
class EffectiveSandbox:
    """Everything one server gets, resolved."""

    name: str
    path: SpecPath
    description: str
    kind: str
    trust: str
    placement: Literal["agent", "dedicated", "external"]
    transport: StdioTransport | HttpTransport
    image: str | None
    package: Package | None
    command: tuple[str, ...]
    command_is_shell: bool
    workdir: str | None
    agents: tuple[str, ...]
    identity: Identity
    resources: Resources
    read_only_root: bool
    env: EnvPlan
    egress: EgressPolicy
    process: ProcessPolicy
    lifecycle: LifecyclePolicy
    logging: LoggingPolicy
    limits: CallLimits
    mounts: tuple[EffectiveMount, ...]
    secrets: tuple[SecretGrant, ...]
    tools: Mapping[str, Tool]
    unlisted_tools: Literal["deny", "allow"] = "deny"
    protocol_revisions: tuple[str, ...] = RELAYED  # as the spec lists them (unknown ones too: lint names them)
    origins: Mapping[str, SpecPath] = field(default_factory=dict)

    def origin(self, dotted: str) -> SpecPath:
        """The spec path that set a resolved field, by its spec key (``"lifecycle.idle_timeout"``,
        ``"runtime.user"``, ``"placement"``).

        A field nobody wrote (a built-in default) gets the path it would have
        under this server; the SourceMap then points at its nearest ancestor.
        """
        found = self.origins.get(dotted)
        if found is not None:
            return found
        return (*self.path, *dotted.split("."))

    def tool_limits(self, tool: str) -> CallLimits:
        """The limits of one call of ``tool``: its own timeout when it sets one, else the server's;
        its own rate (``None`` when it sets none: only the server's rate applies)."""
        own = self.tools[tool].limits if tool in self.tools else None
        if own is None:
            return CallLimits(requests_per_minute=None, call_timeout=self.limits.call_timeout)
        timeout = own.call_timeout if own.call_timeout is not None else self.limits.call_timeout
        return CallLimits(requests_per_minute=own.requests_per_minute, call_timeout=timeout)

    @property
    def runs_here(self) -> bool:
        """Whether mcpspec launches this server (external ones run elsewhere)."""
        return self.placement != "external"

    def for_target(self, target: str) -> EffectiveSandbox:
        """The sandbox as ``target`` builds it: each secret read from that target's source."""
        if not any(grant.sources for grant in self.secrets):
            return self
        return dataclasses.replace(self, secrets=tuple(grant.for_target(target) for grant in self.secrets))


@quick_init
@dataclass(frozen=True, slots=True)
class LockState:
    """What lint knows of the lock beside a spec: the servers it pins, or that there is none."""

    pinned: frozenset[str] | None  # None: no lock file
    error: str | None = None  # the lock exists but cannot be read
    tools: Mapping[str, frozenset[str]] = field(default_factory=dict)  # server -> the tool names the lock pins
    # server -> tool -> the argument names its pinned inputSchema lists (tools whose schema lists none, or
    # allows more, are left out: any name may be right)
    arguments: Mapping[str, Mapping[str, frozenset[str]]] = field(default_factory=dict)


@quick_init
@dataclass(frozen=True, slots=True)
class Plan:
    """The resolved spec of one file."""

    file: str
    spec: Spec
    source: SourceMap
    servers: Mapping[str, EffectiveSandbox]
    agents: Mapping[str, tuple[str, ...]]
    workspace: Workspace | None
    approvals: Approvals
    waivers: tuple[Waiver, ...]
    # The `mcp-sandbox.lock` beside the spec file; None when the spec was not read from a file.
    lock: LockState | None = None
    # Facts derived from the plan once and shared by every rule and target that asks (a memo, not state).
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def project(self) -> str:
        return self.spec.project

    @property
    def protocol_revision(self) -> str:
        return self.spec.protocol_revision
