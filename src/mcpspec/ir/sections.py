"""Turn a server's merged spec sections into the Plan's final types.

The merge (in :mod:`mcpspec.ir.resolve`) leaves a field ``None`` where the file
wrote ``null`` for it; here such a field takes its built-in value, unless
``None`` has a meaning of its own (unlimited memory, no max_lifetime, no process
policy), which the Plan's types document. No target or rule applies a default again.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, TypeVar, cast

from mcpspec.ir.plan import (
    BackgroundPolicy,
    CallLimits,
    EgressPolicy,
    EnvPlan,
    Identity,
    InstallPolicy,
    LifecyclePolicy,
    LoggingPolicy,
    LogSink,
    PausePolicy,
    ProcessPolicy,
    Resources,
    TeardownPolicy,
    host_path,
)
from mcpspec.presets import PresetRef
from mcpspec.spec.models import (
    Background,
    Egress,
    EnvPolicy,
    Lifecycle,
    Limits,
    Logging,
    PackageInstall,
    Pause,
    Process,
    Runtime,
    Teardown,
)
from mcpspec.spec.values import Destination, normalize_host_path

T = TypeVar("T")

DEFAULT_UID = 65532
# A tmpfs workspace dir without a size: 256 MiB.
DEFAULT_SCRATCH = 256 * 1024**2
ALL_LOG_FIELDS = (
    "tool", "caller", "arguments_hash", "sandbox_id", "workspace_id", "command_category",
    "files", "domains", "packages", "exit_status", "artifacts", "decision",
)

# What a server gets for every field that neither it nor `defaults` sets.
BUILTIN: dict[str, Any] = {
    "runtime": Runtime(user=DEFAULT_UID, group=None, memory="512Mi", cpus=1.0, pids=128, read_only_root=True),  # type: ignore[arg-type]
    "env": EnvPolicy(inherit="none", set={}),
    "egress": Egress(default="deny", allow=[], deny=[], via="proxy"),
    "process": Process(allow=None, deny=[], package_install=PackageInstall(), listeners=False, background=Background(), max_runtime=None),
    "lifecycle": Lifecycle(mode="per-session", idle_timeout=None, max_lifetime=None, pause=Pause(), teardown=Teardown()),
    "logging": Logging(audit=True, record=list(ALL_LOG_FIELDS), redact=True, raw_prompts=False, full_output=False, sink="stderr"),  # type: ignore[arg-type]
    "limits": Limits(),
}
SECTIONS = tuple(BUILTIN)
# The built-in values of the nested sections a file may set to ``null``: read, never changed,
# so one instance serves every server.
_NO_INSTALL = PackageInstall()
_NO_BACKGROUND = Background()
_NO_PAUSE = Pause()
_DEFAULT_TEARDOWN = Teardown()


def _given(value: T | None, fallback: T) -> T:
    """A field the file set to ``null`` where null means nothing: the built-in value."""
    return fallback if value is None else value


def identity(runtime: Runtime) -> Identity:
    uid = _given(runtime.user, DEFAULT_UID)
    return Identity(uid=uid, gid=_given(runtime.group, uid))


def resources(runtime: Runtime) -> Resources:
    return Resources(memory=runtime.memory, cpus=runtime.cpus, pids=runtime.pids)


def env(policy: EnvPolicy) -> EnvPlan:
    inherit = policy.inherit
    return EnvPlan(
        inherit=tuple(inherit) if isinstance(inherit, list) else _given(inherit, "none"),
        set=dict(policy.set or {}),
    )


def egress(policy: Egress) -> EgressPolicy:
    allow, allow_at = _expanded(policy.allow or [])
    deny, deny_at = _expanded(policy.deny or [])
    return EgressPolicy(
        default=_given(policy.default, "deny"),
        via=_given(policy.via, "proxy"),
        allow=allow,
        deny=deny,
        allow_at=allow_at,
        deny_at=deny_at,
    )


def _expanded(entries: list[Destination | PresetRef]) -> tuple[tuple[Destination, ...], tuple[int, ...]]:
    """The entries with each preset replaced by its destinations, and each one's index in the spec's list."""
    out: list[Destination] = []
    at: list[int] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, PresetRef):
            expanded = entry.preset.destinations()
            out += expanded
            at += [index] * len(expanded)
        else:
            out.append(entry)
            at.append(index)
    return tuple(out), tuple(at)


def process(policy: Process) -> ProcessPolicy:
    install = _given(policy.package_install, _NO_INSTALL)
    background = _given(policy.background, _NO_BACKGROUND)
    return ProcessPolicy(
        allow=None if policy.allow is None else tuple(policy.allow),
        deny=tuple(policy.deny or ()),
        package_install=InstallPolicy(install.allowed, tuple(install.registries), install.lockfile, install.cache),
        listeners=_given(policy.listeners, False),
        background=BackgroundPolicy(background.allowed, background.max_jobs, background.max_runtime),
        max_runtime=policy.max_runtime,
    )


def lifecycle(policy: Lifecycle) -> LifecyclePolicy:
    pause = _given(policy.pause, _NO_PAUSE)
    teardown = _given(policy.teardown, _DEFAULT_TEARDOWN)
    return LifecyclePolicy(
        mode=_given(policy.mode, "per-session"),
        idle_timeout=policy.idle_timeout,
        max_lifetime=policy.max_lifetime,
        pause=PausePolicy(pause.allowed, pause.max_paused),
        template=policy.template,
        snapshot=policy.snapshot,
        teardown=TeardownPolicy(teardown.kill_processes, teardown.remove_workspace, teardown.revoke_secrets, teardown.copy_out),
    )


@functools.lru_cache(maxsize=256)  # servers share their sink, mostly set once in defaults
def sink(text: str | None) -> LogSink:
    """The audit sink; raises ValueError for a path that is not a host path."""
    if text is None or text in ("stderr", "journal"):
        return LogSink(cast(Literal["stderr", "journal"], text or "stderr"))
    return LogSink("file", host_path(normalize_host_path(text)))


def logging(policy: Logging, audit_sink: LogSink) -> LoggingPolicy:
    return LoggingPolicy(
        audit=_given(policy.audit, True),
        record=tuple(_given(policy.record, list(ALL_LOG_FIELDS))),
        redact=_given(policy.redact, True),
        raw_prompts=_given(policy.raw_prompts, False),
        full_output=_given(policy.full_output, False),
        sink=audit_sink,
    )


def limits(policy: Limits) -> CallLimits:
    return CallLimits(requests_per_minute=policy.requests_per_minute, call_timeout=policy.call_timeout)
