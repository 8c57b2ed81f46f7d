"""What a target is: a pure emitter Plan -> files, and the controls it can enforce.

Every target declares, per control, whether it enforces it fully, partly or not
at all (its capability matrix, shown in ``targets/<name>/README.md``). While it
emits a server's files it reports a Gap for each control the server asks for
that it cannot enforce in full; the build turns gaps into findings (TG001-TG004)
so nothing the spec asks for is dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.redact import redact
from mcpspec.spec.models import IMAGE_PATTERN

Level = Literal["full", "partial", "none"]
ControlKind = Literal["boundary", "policy"]


@dataclass(frozen=True, slots=True)
class Control:
    """One thing a spec can ask a sandbox for.

    A ``boundary`` control limits what the server can reach: leaving it out would
    grant more than the spec, so a target that cannot enforce it stops the build.
    A ``policy`` control governs timing, housekeeping or individual calls: a target
    that cannot enforce it says so and builds.
    """

    id: str
    title: str
    kind: ControlKind


CONTROLS: tuple[Control, ...] = (
    Control("mounts", "mounts ro/rw", "boundary"),
    Control("hidden-paths", "hidden host paths", "boundary"),
    Control("identity", "non-root uid, no capabilities", "boundary"),
    Control("env", "environment", "boundary"),
    Control("secrets", "secrets", "boundary"),
    Control("egress-deny", "egress deny", "boundary"),
    Control("egress-allowlist", "egress allowlist by name", "boundary"),
    Control("metadata-blocking", "metadata and private address blocking", "boundary"),
    Control("listeners", "listeners", "boundary"),
    Control("memory", "memory limit", "boundary"),
    Control("pids", "process limit", "boundary"),
    # CPU is a rate: going over it slows a server down, it never widens what the server reaches.
    Control("cpu", "CPU limit", "policy"),
    Control("lifetime", "max lifetime", "boundary"),
    Control("syscall-filter", "syscall filter", "boundary"),
    Control("idle-timeout", "idle timeout", "policy"),
    Control("package-install", "package install", "policy"),
    Control("process-policy", "command allow and deny lists", "policy"),
    Control("workspace-lifecycle", "workspace reset and teardown", "policy"),
    Control("audit-log", "audit log", "policy"),
    Control("image", "image pinning", "policy"),
    Control("call-policy", "approvals, rate limits and call timeouts", "policy"),
)
CONTROL_BY_ID = {control.id: control for control in CONTROLS}


@dataclass(frozen=True, slots=True)
class Capability:
    """How far a target enforces one control, how, and the tests that attack it.

    ``proof`` names tests (``tests/FILE.py::NAME``) that run the attack on the generated
    artifact and fail if it gets through; a ``full`` level needs at least one.
    """

    level: Level
    how: str
    proof: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Gap:
    """A control a server asks for that the target does not enforce in full.

    ``level`` is what the target does for this server (``partial`` or ``none``);
    ``unrepresentable`` marks a value the target's syntax cannot carry safely,
    which always stops the build.
    """

    control: str
    level: Literal["partial", "none"]
    path: SpecPath
    message: str
    unrepresentable: bool = False
    server: str = ""  # the server it concerns, when the path is a shared one (defaults)


class Refused(Exception):
    """A value of one server that the target cannot write safely: the skeleton makes it a TG004
    finding at ``path`` and builds nothing for that server."""

    def __init__(self, control: str, path: SpecPath, message: str) -> None:
        super().__init__(message)
        self.control = control
        self.path = path


@dataclass
class Emitted:
    """Files a target writes for one server (or for the whole project), by relative path."""

    files: dict[str, str] = field(default_factory=dict)
    executable: set[str] = field(default_factory=set)


@dataclass
class BuildOutput:
    """What a target emits for one spec: files by relative path, and its gaps."""

    files: dict[str, str] = field(default_factory=dict)
    executable: set[str] = field(default_factory=set)
    gaps: list[Gap] = field(default_factory=list)
    # server name -> control id -> level actually enforced for it (only servers whose files were written)
    enforcement: dict[str, dict[str, Level]] = field(default_factory=dict)


# A directory under the kubelet's seccomp root: relative, every component starting with a letter, digit or _ (so no . or ..).
_PROFILE_DIR = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}(?:/[A-Za-z0-9_][A-Za-z0-9._-]{0,99}){0,7}")


# control id -> (level, what the target does instead) for one server
Overrides = dict[str, tuple[Level, str]]


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """Build inputs that are not in the spec (``mcpspec build --proxy-image ...``).

    A target lists the ones it reads in ``Target.options``; the build refuses an option set
    for a target that would ignore it, so no flag ever looks applied when it is not.
    """

    proxy_image: str | None = None  # the egress proxy's image, pinned by digest (container targets)
    egress: Literal["proxy", "cilium"] = "proxy"  # how an allowlist by name is enforced (k8s)
    secret_store: str | None = None  # the external-secrets store vault secrets come from (k8s)
    # The podPidsLimit of the kubelets the pods run on, as the operator states it (k8s): a pod spec cannot limit processes.
    pod_pids_limit: int | None = None
    # The MCP client whose config the client target writes (claude-desktop, claude-code, vscode, cursor, codex).
    client: str | None = None
    # The spec's absolute path, which the client's config hands to `mcpspec run` (set by the build from FILE).
    spec_path: str | None = None
    # What the client target's entries start: `mcpspec run` (bwrap), the compose file through an engine, or (VS Code) the server under VS Code's srt.
    via: Literal["run", "docker-compose", "podman-compose", "srt"] = "run"
    # The output directory's absolute path, where the client's entries find the compose file (set by the build from --out).
    out_dir: str | None = None
    # Where the nodes hold this build's seccomp profiles, under the kubelet's seccomp directory (k8s: Localhost profiles).
    seccomp_localhost: str | None = None
    # The target whose build (written under OUT/<sandbox>/) starts the servers a gateway's policy fronts (cedar).
    sandbox: str | None = None

    def __post_init__(self) -> None:
        if self.pod_pids_limit is not None and self.pod_pids_limit < 1:
            raise ValueError("--pod-pids-limit must be a positive number of processes")
        if self.seccomp_localhost is not None and not _PROFILE_DIR.fullmatch(self.seccomp_localhost):
            raise ValueError(f"--seccomp-localhost {self.seccomp_localhost!r} must be a relative directory under the kubelet's seccomp directory, such as "
                             "mcpspec/acme (letters, digits, . _ - and /, no . or .. component)")
        if self.proxy_image is not None and not re.fullmatch(IMAGE_PATTERN, self.proxy_image):
            # Also what keeps a registry credential (user:token@host) out of the manifest and the compose file.
            raise ValueError(f"--proxy-image {redact(self.proxy_image)!r} is not an image reference such as registry.example/squid@sha256:<64 hex digits> (no credentials, no spaces)")

    def given(self) -> dict[str, str]:
        """The options set to something other than their default, by name."""
        default = BuildOptions()
        return {name: str(getattr(self, name)) for name in self.__slots__ if getattr(self, name) != getattr(default, name)}


class Target(Protocol):
    """One compiler Plan -> files. The skeleton (``targets.skeleton``) runs the per-server loop;
    a target supplies only what differs: its matrix, its data-dependent gaps and its files."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def usage(self) -> str:
        """How to install and run the output (Markdown, shown in ``targets/<name>/README.md``)."""
        ...

    @property
    def capabilities(self) -> Mapping[str, Capability]: ...

    @property
    def options(self) -> frozenset[str]:
        """The ``BuildOptions`` fields this target reads (empty for most)."""
        ...

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        """What this server asks for that the target cannot give it beyond its matrix: gaps of their
        own, and a lower level (with the reason) for controls of the matrix."""
        ...

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        """The files of one server; raises ``Refused`` (or ``Unrepresentable``) for a value it cannot write."""
        ...

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        """Files the built servers share (a compose file, a proxy config); empty for most targets."""
        ...
