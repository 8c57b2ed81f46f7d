"""The Plan: one fully resolved, target-neutral EffectiveSandbox per server.

Rules, targets and reports read only this. Every value is final (defaults
applied, references followed, paths normalized) and remembers the spec path
that set it, so a finding about it can point at the right line, including a
line in ``defaults`` when that is where the value came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from mcpspec.diagnostics import SpecPath
from mcpspec.source.sourcemap import SourceMap
from mcpspec.spec.models import (
    Approvals,
    Egress,
    EnvPolicy,
    HttpTransport,
    Lifecycle,
    Limits,
    Logging,
    Package,
    Process,
    Runtime,
    Spec,
    StdioTransport,
    Tool,
    Waiver,
    Workspace,
)

AGENT_TOKEN = "{agent}"
RUN_TOKEN = "{run_id}"


@dataclass(frozen=True, slots=True)
class EffectiveMount:
    """A mount as a target must create it.

    ``source`` is a normalized host path, a path under ``~`` (the invoking
    user's home), or for workspace dirs a template holding ``{agent}`` and
    ``{run_id}``, filled in per run by the target.
    """

    source: str
    target: str
    mode: Literal["ro", "rw"]
    path: SpecPath
    workspace_dir: str | None = None
    tmpfs: bool = False
    size: int | None = None

    @property
    def writable(self) -> bool:
        return self.mode == "rw"


@dataclass(frozen=True, slots=True)
class SecretGrant:
    """A secret handed to one server, and the one form it takes inside."""

    name: str
    provider: str
    ref: str
    scopes: tuple[str, ...]
    ttl: float | None
    env: str | None
    file: str | None
    path: SpecPath
    secret_path: SpecPath


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
    runtime: Runtime
    env: EnvPolicy
    egress: Egress
    process: Process
    lifecycle: Lifecycle
    logging: Logging
    limits: Limits
    mounts: tuple[EffectiveMount, ...]
    secrets: tuple[SecretGrant, ...]
    tools: Mapping[str, Tool]
    origins: Mapping[str, SpecPath] = field(default_factory=dict)

    def origin(self, dotted: str) -> SpecPath:
        """The spec path that set a resolved field (``"lifecycle.idle_timeout"``).

        A field nobody wrote (a built-in default) gets the path it would have
        under this server; the SourceMap then points at its nearest ancestor.
        """
        found = self.origins.get(dotted)
        if found is not None:
            return found
        return (*self.path, *dotted.split("."))

    @property
    def runs_here(self) -> bool:
        """Whether mcpspec launches this server (external ones run elsewhere)."""
        return self.placement != "external"


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

    @property
    def project(self) -> str:
        return self.spec.project

    @property
    def protocol_revision(self) -> str:
        return self.spec.protocol_revision
