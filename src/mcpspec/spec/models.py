"""The pydantic models of mcp-sandbox.yaml, version 1.

Every field carries a description and an example: they feed the JSON Schema
(editors show them) and docs/spec.md (generated, checked by a test). Models
describe what the user wrote; defaults are applied and references resolved
later, in mcpspec.ir, which is why section fields stay unset (``None``) when
the user left them out: the resolver must know what was written where.

Unlike the other modules, this one does not postpone its annotations (no ``from __future__
import annotations``): pydantic reads every field's type when a model is created, and
evaluating ~150 annotation strings at every start cost more than writing them as objects.
"""

import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, PlainValidator, WithJsonSchema, field_validator, model_validator

from mcpspec.presets import PATTERN as PRESET_PATTERN
from mcpspec.presets import PRESETS, PresetRef, parse_egress_entry
from mcpspec.spec.base import SpecModel as SpecModel  # re-exported: every module names it from here
from mcpspec.spec.conditions import Action, ArgRule
from mcpspec.spec.patterns import (
    CACHE_PATTERN,
    EGRESS_PATTERN,
    HOST_PATH_PATTERN,
    IP_ADDRESS_PATTERN,
    LOGICAL_PATH_PATTERN,
    MOUNT_SOURCE_PATTERN,
    SANDBOX_PATH_PATTERN,
    SINK_PATTERN,
)
from mcpspec.spec.values import (
    DIR_NAME_PATTERN,
    DURATION_PATTERN,
    ENV_NAME_PATTERN,
    NAME_PATTERN,
    SIZE_PATTERN,
    TOOL_NAME_PATTERN,
    TTL_PATTERN,
    Destination,
    check_name,
    normalize_host_path,
    normalize_sandbox_path,
    parse_duration,
    parse_scopes,
    parse_size,
    parse_ttl,
)

SCHEMA_VERSION = 1
# An egress entry in the schema: a preset by name or a destination.
PRESET_OR_DESTINATION = f"(?:{PRESET_PATTERN})|(?:{EGRESS_PATTERN})"
PROTOCOL_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

# patternErrorMessage: what VS Code's YAML extension says instead of quoting the pattern (other tools ignore it).
Name = Annotated[
    str,
    AfterValidator(check_name),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": NAME_PATTERN,
            "patternErrorMessage": "1-40 lowercase letters, digits and '-', starting with a letter and not ending with '-'",
        }
    ),
]
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
DirName = Annotated[str, Field(pattern=DIR_NAME_PATTERN)]
Duration = Annotated[
    float,
    PlainValidator(parse_duration),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": DURATION_PATTERN,
            "patternErrorMessage": "a duration with a unit, more than zero: 30s, 15m, 4h, 7d, 1h30m, 250ms",
            "description": "A duration: 30s, 15m, 4h, 7d, 1h30m.",
        }
    ),
]
Size = Annotated[
    int,
    PlainValidator(parse_size),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": SIZE_PATTERN,
            "patternErrorMessage": "a size with a unit (B, K, M, G, T, Ki, Mi, Gi, Ti), at least 1: 256Mi, 1Gi, 500M",
            "description": "A size: 256Mi, 1Gi, 500M.",
        }
    ),
]
SandboxPath = Annotated[
    str,
    AfterValidator(normalize_sandbox_path),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": SANDBOX_PATH_PATTERN,
            "patternErrorMessage": "an absolute path without '..' segments or control characters",
            "description": "An absolute path inside the sandbox.",
        }
    ),
]
HostPath = Annotated[
    str,
    AfterValidator(normalize_host_path),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": HOST_PATH_PATTERN,
            "patternErrorMessage": "an absolute path or one under ~/, without '..' segments or control characters",
            "description": "An absolute host path, or one under ~/.",
        }
    ),
]
EgressEntry = Annotated[
    Destination | PresetRef,
    PlainValidator(parse_egress_entry),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": PRESET_OR_DESTINATION,
            "patternErrorMessage": "host:port ('*' for every port), *.domain:port, a CIDR or IP (optionally :port), [IPv6]:port, or a preset: "
            + ", ".join(p.ref for p in PRESETS.values()),
            "description": "host:port, *.domain:port, a CIDR (optionally :port), IP:port, [IPv6]:port, or a preset: " + ", ".join(p.ref for p in PRESETS.values()) + ".",
        }
    ),
]
Effect = Literal[
    "reads_private",
    "reads_untrusted",
    "writes_local",
    "external_send",
    "exec",
    "deploy",
    "destructive",
    "modify_access",
    "financial",
    "exports_data",
]
# `none` says a tool has no effect at all (a pure computation); it stands alone in a tool's list.
ToolEffect = Literal[Effect, "none"]
IMAGE_PATTERN = (
    r"^[a-z0-9]+([._-][a-z0-9]+)*(\.[a-z0-9-]+)*(:[0-9]+)?(/[a-z0-9]+([._-]{1,2}[a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$"
)
ImageRef = Annotated[str, Field(pattern=IMAGE_PATTERN)]
# A protocol revision is a date-shaped string; YAML reads 2025-11-25 unquoted as a date, taken as its text.
Revision = Annotated[
    str,
    BeforeValidator(lambda value: value.isoformat() if isinstance(value, datetime.date) else value),
    Field(min_length=1, max_length=64),
]
Ttl = Annotated[
    float | Literal["none"],
    PlainValidator(parse_ttl),
    WithJsonSchema({"type": "string", "pattern": TTL_PATTERN, "description": "A duration (1h, 30d), or none for a credential that does not expire."}),
]
Scopes = Annotated[
    list[str] | Literal["none"],
    PlainValidator(parse_scopes),
    WithJsonSchema(
        {
            "oneOf": [{"type": "array", "items": {"type": "string", "minLength": 1, "not": {"const": "none"}}}, {"const": "none"}],
            "description": "Scopes or permissions, or none for a credential that has none.",
        }
    ),
]
Arg = Annotated[str, Field(pattern=r"^[^\x00]*$")]


# Fields where writing null means something of its own: it lifts a limit (or, for
# process.allow, the process policy) that `defaults` or the built-in default sets.
# Elsewhere null means the same as leaving the key out, so the JSON Schema offers only
# the real type (editors then say "is not of type 'string'", not "... 'null'").
NULL_LIFTS: frozenset[tuple[str, str]] = frozenset(
    {
        ("Runtime", "memory"),
        ("Runtime", "cpus"),
        ("Runtime", "pids"),
        ("Process", "allow"),
        ("Process", "max_runtime"),
        ("Background", "max_jobs"),
        ("Background", "max_runtime"),
        ("Lifecycle", "idle_timeout"),
        ("Lifecycle", "max_lifetime"),
        ("Pause", "max_paused"),
        ("Limits", "requests_per_minute"),
        ("Limits", "call_timeout"),
    }
)


def _doc(description: str, example: Any, default: Any = None) -> Any:
    """A field with its documentation; ``default=...`` makes it required."""
    return Field(default, description=description, examples=[example])


# --- runtime, env, egress, process, lifecycle, logging, limits: sections that `defaults` may set ---


class Runtime(SpecModel):
    """How the server's process runs: identity and resource limits."""

    user: int | None = Field(None, ge=0, le=4294967294, description="Numeric uid inside the sandbox; 0 is root. Default 65532.", examples=[65532])
    group: int | None = Field(None, ge=0, le=4294967294, description="Numeric gid inside the sandbox. Default: the same as user.", examples=[65532])
    memory: Size | None = _doc("Memory limit. Default 512Mi; null means unlimited.", "512Mi")
    cpus: float | None = Field(None, gt=0, le=1024, description="CPU limit in cores. Default 1.0; null means unlimited.", examples=[1.0])
    pids: int | None = Field(None, ge=1, le=4194304, description="Maximum number of processes and threads. Default 128; null means unlimited.", examples=[128])
    read_only_root: bool | None = _doc("Mount the root filesystem read-only. Default true.", True)


# What env.inherit: minimal passes from the host. docs/spec.md says so from this constant, the
# bwrap launcher passes exactly these, and container targets keep the image's own values of
# IMAGE_ENV (tests/test_minimal_env.py checks the docs and the targets against it).
MINIMAL_ENV = ("HOME", "LANG", "PATH", "TERM")
IMAGE_ENV = ("HOME", "PATH")


class EnvPolicy(SpecModel):
    """Which environment variables the server's process sees."""

    inherit: Literal["none", "minimal", "all"] | list[EnvName] | None = _doc(
        f"Host variables passed through: none, minimal ({', '.join(MINIMAL_ENV)}; container targets keep the image's {' and '.join(IMAGE_ENV)}), "
        "all, or a list of names. Default none.",
        "none",
    )
    set: dict[EnvName, Annotated[str, Field(pattern=r"^[^\x00]*$")]] | None = _doc(
        "Literal, non-secret values set in the server's environment. Secrets go under the server's 'secrets'.",
        {"LOG_LEVEL": "info"},
    )


class Egress(SpecModel):
    """Where the server may open network connections."""

    default: Literal["deny", "allow"] | None = _doc("What happens to destinations not listed. Default deny.", "deny")
    allow: list[EgressEntry] | None = _doc(
        "Destinations reachable despite default deny: host:port, *.domain:port (subdomains only), CIDR, IP:port, or a preset such as @private.",
        ["docs.python.org:443", "*.readthedocs.io:443"],
    )
    deny: list[EgressEntry] | None = _doc(
        "Destinations refused even when default is allow; presets such as @metadata and @private name whole sets.", ["@metadata", "@private"]
    )
    via: Literal["proxy", "direct"] | None = _doc(
        "How a target enforces names: proxy (a filtering proxy resolves and checks names) or direct (IP rules only). Default proxy.",
        "proxy",
    )


class PackageInstall(SpecModel):
    """Whether the server may install packages at run time, and from where."""

    allowed: bool = _doc("May the server install packages at all.", False, default=False)
    registries: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, description="Registries installs may come from (names such as pypi, npm).", examples=[["pypi"]]
    )
    lockfile: Literal["required", "optional"] = _doc("Must installs follow a lockfile.", "required", default="required")
    cache: str | None = Field(
        None,
        description="Where package caches live: workspace.<dir> or an absolute sandbox path.",
        examples=["workspace.tmp"],
        json_schema_extra={"pattern": CACHE_PATTERN, "patternErrorMessage": "workspace.<dir> or an absolute sandbox path"},
    )


class Background(SpecModel):
    """Whether spawned commands may outlive the call that started them."""

    allowed: bool = _doc("May spawned commands keep running in the background.", False, default=False)
    max_jobs: int | None = Field(None, ge=1, description="Most background jobs at once.", examples=[2])
    max_runtime: Duration | None = _doc("Longest a background job may run.", "30m")


class Process(SpecModel):
    """What the server may spawn."""

    allow: list[Annotated[str, Field(min_length=1)]] | None = _doc(
        "Commands the server may spawn; an empty list means none. Unset means no process policy.", ["git", "python", "pytest"]
    )
    deny: list[Annotated[str, Field(min_length=1)]] | None = _doc("Commands the server must never spawn.", ["curl", "wget", "ssh"])
    package_install: PackageInstall | None = _doc("Run-time package installation policy. Default: not allowed.", {"allowed": False})
    listeners: bool | None = _doc("May the server open listening sockets. Default false.", False)
    background: Background | None = _doc("Background job policy. Default: not allowed.", {"allowed": False})
    max_runtime: Duration | None = _doc("Longest one spawned command may run.", "10m")


class Pause(SpecModel):
    """Whether a sandbox may be paused and resumed later without holding compute."""

    allowed: bool = _doc("May the sandbox be paused.", False, default=False)
    max_paused: Duration | None = _doc("Longest a sandbox may stay paused before it is torn down.", "24h")


class Teardown(SpecModel):
    """What happens when a sandbox ends."""

    kill_processes: bool = _doc("Kill every process the sandbox started.", True, default=True)
    remove_workspace: bool = _doc("Delete the run's workspace.", True, default=True)
    revoke_secrets: bool = _doc("Revoke or expire the secrets handed to the run.", True, default=True)
    copy_out: Literal["artifacts", "none"] = _doc("Copy workspace.artifacts out before removal, or nothing.", "artifacts", default="artifacts")


class Lifecycle(SpecModel):
    """How long a sandbox lives and how it starts and ends."""

    mode: Literal["per-task", "per-session", "long-lived"] | None = _doc(
        "A fresh sandbox per task, per agent session, or one long-lived sandbox. Default per-session.", "per-task"
    )
    idle_timeout: Duration | None = _doc("Tear down a sandbox that has been idle this long.", "15m")
    max_lifetime: Duration | None = _doc("Tear down a sandbox this long after it started, whatever it is doing.", "4h")
    pause: Pause | None = _doc("Pause and resume policy. Default: no pausing.", {"allowed": True, "max_paused": "24h"})
    template: str | None = _doc("Image or template a fresh sandbox starts from.", "ghcr.io/acme/sandbox-base@sha256:...")
    snapshot: str | None = _doc("Named snapshot a sandbox starts from instead of a template.", "repo-warm")
    teardown: Teardown | None = _doc("What teardown does. Default: everything, copying artifacts out.", {"copy_out": "artifacts"})


LogField = Literal[
    "tool",
    "caller",
    "arguments_hash",
    "sandbox_id",
    "workspace_id",
    "command_category",
    "files",
    "domains",
    "packages",
    "exit_status",
    "artifacts",
    "decision",
]


class Logging(SpecModel):
    """What is recorded about the server's tool calls, and where."""

    audit: bool | None = _doc("Write one JSON line per tool call and per launch. Default true.", True)
    record: list[LogField] | None = _doc("Fields each audit line records. Default: all of them.", ["tool", "caller", "exit_status"])
    redact: bool | None = _doc("Mask secrets and secret-shaped strings in every log. Default true.", True)
    raw_prompts: bool | None = _doc("Log prompts verbatim. Default false.", False)
    full_output: bool | None = _doc("Log full tool output. Default false.", False)
    sink: str | None = Field(
        None,
        description="Where audit lines go: stderr, journal, or an absolute host file path. Default stderr.",
        examples=["/var/log/mcp/audit.jsonl"],
        json_schema_extra={"pattern": SINK_PATTERN, "patternErrorMessage": "stderr, journal, or an absolute host path or one under ~/"},
    )


class Limits(SpecModel):
    """Rate and time limits on tool calls."""

    requests_per_minute: int | None = Field(None, ge=1, description="Most tool calls per minute.", examples=[60])
    call_timeout: Duration | None = _doc("Longest one tool call may take.", "2m")


class Defaults(SpecModel):
    """Section values applied to every server that does not set the same field."""

    runtime: Runtime | None = _doc("Default runtime identity and limits.", {"user": 65532, "memory": "512Mi"})
    env: EnvPolicy | None = _doc("Default environment policy.", {"inherit": "none"})
    egress: Egress | None = _doc("Default egress policy.", {"default": "deny"})
    process: Process | None = _doc("Default process policy.", {"allow": [], "listeners": False})
    lifecycle: Lifecycle | None = _doc("Default lifecycle.", {"mode": "per-task", "idle_timeout": "15m"})
    logging: Logging | None = _doc("Default logging.", {"audit": True, "redact": True})
    limits: Limits | None = _doc("Default call limits.", {"requests_per_minute": 60})


# --- workspace, agents, secrets ---


class WorkspaceDir(SpecModel):
    """One directory of every run's workspace."""

    mode: Literal["ro", "rw"] = _doc("Read-only or read-write for the servers that mount it.", "rw", default="ro")
    tmpfs: bool = _doc("Back the directory with memory instead of disk (emptied at teardown).", False, default=False)
    size: Size | None = _doc("Size limit; only a tmpfs directory can be limited.", "256Mi")


class Workspace(SpecModel):
    """The per-run directory tree servers mount parts of, instead of host paths."""

    root: HostPath = _doc("Host directory holding every run's workspace: {root}/{agent}/{run_id}.", "/srv/mcp/workspaces", default=...)
    per_agent: bool = _doc("Give each agent its own workspace tree (otherwise all agents share one).", True, default=True)
    reset: Literal["per-task", "per-session", "never"] = _doc("When a workspace is emptied.", "per-task", default="per-task")
    dirs: dict[DirName, WorkspaceDir] = Field(
        default_factory=dict,
        description="Named directories of each run; servers mount them as workspace.<name>.",
        examples=[{"input": {"mode": "ro"}, "output": {"mode": "rw"}}],
    )
    artifacts: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, description="Glob patterns (relative to the run dir) that leave the sandbox at teardown.", examples=[["output/**"]]
    )


class Agent(SpecModel):
    """One model context: the servers whose tools it sees together."""

    description: str = _doc("What the agent does.", "Coding assistant for the acme repo.", default="")
    servers: list[Name] = Field(
        min_length=1, description="Servers whose tools this agent can call, each once.", examples=[["repo", "fetch"]], json_schema_extra={"uniqueItems": True}
    )


class Rotation(SpecModel):
    """When a secret is replaced."""

    every: Duration | None = _doc("Rotate on this schedule.", "30d")
    on_exposure: bool = _doc("Rotate as soon as an exposure is suspected.", True, default=False)


SecretProvider = Literal["env", "file", "vault", "k8s-secret", "systemd-credential"]
# The targets a secret may name a source of its own for (the client target reads the source of
# what its entries start: `mcpspec run`, bwrap's, or the compose file, compose's).
SourceTarget = Literal["bwrap", "systemd", "compose", "k8s"]
SOURCE_TARGETS: tuple[str, ...] = ("bwrap", "systemd", "compose", "k8s")
_REF_DOC = "Provider-specific reference: env var name, absolute file path, vault path#field, k8s name#key, or credential name."


class SecretSource(SpecModel):
    """Where one target reads a secret's value: a provider and its reference."""

    provider: SecretProvider = _doc("Where the value is read at launch.", "k8s-secret", default=...)
    ref: str = Field(min_length=1, description=_REF_DOC, examples=["issues-token#token"])


class Secret(SpecModel):
    """A named credential: where its value comes from, never the value itself."""

    provider: SecretProvider = _doc("Where the value is read at launch, by every target without a source of its own in 'sources'.", "env", default=...)
    ref: str = Field(min_length=1, description=_REF_DOC, examples=["ISSUES_TOKEN_RO"])
    sources: dict[SourceTarget, SecretSource] = Field(
        default_factory=dict,
        description="Where a target reads the value instead of provider and ref, by target (bwrap, systemd, compose, k8s), "
        "so one spec builds for each: a pod reads a Kubernetes Secret while a host launcher reads a file.",
        examples=[{"k8s": {"provider": "k8s-secret", "ref": "issues-token#token"}, "systemd": {"provider": "systemd-credential", "ref": "issues-token"}}],
    )
    description: str = _doc("What the credential is for.", "Read-only issue tracker token.", default="")
    scopes: Scopes = Field(
        default_factory=list,
        description="Scopes or permissions the credential carries; none says it has no scopes (a database password).",
        examples=[["issues:read"]],
    )
    ttl: Ttl | None = _doc("How long one issued value stays valid; none says it does not expire (a Slack bot token).", "1h")
    rotation: Rotation | None = _doc("Rotation policy.", {"every": "30d", "on_exposure": True})
    exposed: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description=(
            "Where a value of this credential was seen in plain text (`mcpspec import` writes the client config's file:line). "
            "SE010 reports it until the credential is rotated and this key deleted."
        ),
        examples=["claude_desktop_config.json:10"],
    )

    def every_source(self) -> tuple[tuple[tuple[str, ...], str, str], ...]:
        """(key path under the secret, provider, ref) of the default source, then of each target's own."""
        return (((), self.provider, self.ref), *((("sources", target), own.provider, own.ref) for target, own in self.sources.items()))

    @property
    def scope_list(self) -> tuple[str, ...]:
        """The declared scopes; empty for none or for none declared."""
        return () if self.scopes == "none" else tuple(self.scopes)

    @property
    def ttl_seconds(self) -> float | None:
        """How long one value stays valid; None for no expiry (written none) or none declared."""
        return None if self.ttl == "none" else self.ttl


# --- servers ---


class StdioTransport(SpecModel):
    """The client starts the server and speaks MCP over its stdin and stdout."""

    type: Literal["stdio"] = _doc("Transport type.", "stdio", default="stdio")


class HttpAuth(SpecModel):
    """How HTTP clients authenticate to the server."""

    type: Literal["none", "bearer", "oauth2", "mtls"] = _doc("Authentication scheme.", "oauth2", default=...)
    audience: str | None = _doc("OAuth audience (resource) tokens must be issued for.", "https://mcp.example.com/issues")


class HttpTransport(SpecModel):
    """Streamable HTTP: the server listens (or, when external, is reached at url)."""

    type: Literal["http", "sse"] = _doc("http (Streamable HTTP) or sse (the deprecated HTTP+SSE transport).", "http", default=...)
    url: str | None = Field(None, pattern=r"^https?://[^\s]+$", description="URL of an external server.", examples=["https://mcp.example.com/issues"])
    bind: str | None = Field(
        None, description="Address the server listens on. Default 127.0.0.1.", examples=["127.0.0.1"], json_schema_extra={"pattern": IP_ADDRESS_PATTERN, "patternErrorMessage": "an IP address such as 127.0.0.1 or ::1"}
    )
    port: int | None = Field(None, ge=1, le=65535, description="Port the server listens on.", examples=[8931])
    auth: HttpAuth | None = _doc("Authentication. Unset means none.", {"type": "bearer"})
    allowed_origins: list[str] | None = _doc("Origin header values accepted; [] accepts none. Unset means not checked.", [])


class Package(SpecModel):
    """A package the server is installed from."""

    registry: Literal["pypi", "npm", "cargo", "go", "oci", "other"] = _doc("Package registry.", "pypi", default=...)
    name: str = Field(min_length=1, description="Package name.", examples=["mcp-server-fetch"])
    version: str | None = _doc("Exact version; unset means whatever is newest.", "2025.4.7")


class SecretForm(SpecModel):
    """The form a secret takes inside the sandbox: exactly one of env or file."""

    env: EnvName | None = _doc("Environment variable that holds the value.", "ISSUES_TOKEN")
    file: SandboxPath | None = _doc("Path of a file that holds the value.", "/run/secrets/token")

    @model_validator(mode="after")
    def _exactly_one(self) -> "SecretForm":
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of 'env' or 'file'")
        return self


class SecretBinding(SpecModel):
    """A named secret handed to one server."""

    use: Name = _doc("Name of an entry under the top-level 'secrets'.", "issues-ro", default=...)
    as_: SecretForm = Field(alias="as", description="How the value appears inside.", examples=[{"env": "ISSUES_TOKEN"}])


class Mount(SpecModel):
    """A directory or file made visible inside the sandbox."""

    from_: str = Field(
        alias="from",
        min_length=1,
        description="workspace.<dir>, an absolute host path, or a path under ~/.",
        examples=["workspace.output"],
        json_schema_extra={
            "pattern": MOUNT_SOURCE_PATTERN,
            "patternErrorMessage": "workspace.<dir>, an absolute host path or one under ~/, without '..' segments",
        },
    )
    to: SandboxPath = _doc("Absolute path inside the sandbox.", "/workspace/output", default=...)
    mode: Literal["ro", "rw"] | None = _doc("Read-only or read-write. Default: the workspace dir's mode, or ro for host paths.", "ro")


class Tool(SpecModel):
    """What one MCP tool of the server does, as the spec asserts it (annotations are not trusted)."""

    description: str = _doc("What the tool does.", "Deploy a preview.", default="")
    effects: list[ToolEffect] = Field(
        default_factory=list,
        description="What the tool's calls do; [none] says they do none of these (a pure computation). Unset or [] means undeclared.",
        examples=[["deploy"]],
        json_schema_extra={"if": {"contains": {"const": "none"}}, "then": {"maxItems": 1}},
    )
    approval: Literal["always", "per-session", "never"] | None = _doc(
        "When a person must approve a call. Unset: decided by the top-level approvals.", "always"
    )
    when: list[ArgRule] = Field(
        default_factory=list,
        max_length=32,
        description="Argument rules, tried in order: the first whose condition holds allows the call, sends it to approval or refuses it "
        "(docs/run.md, Argument conditions). None holds: 'otherwise', else approval as usual.",
        examples=[[{"name": "output area", "if": {"arg": "path", "glob": "/workspace/output/**"}, "then": "allow"}]],
    )
    otherwise: Action | None = _doc("What a call no rule of 'when' catches gets: allow, approve or refuse. Unset: approval as usual.", "refuse")
    limits: Limits | None = _doc(
        "Call limits of this tool alone (`mcpspec run` enforces them beside the server's: its own rate, and its timeout instead of the server's).",
        {"call_timeout": "30s"},
    )

    @field_validator("effects")
    @classmethod
    def _none_alone(cls, effects: list[ToolEffect]) -> list[ToolEffect]:
        if "none" in effects and len(effects) > 1:
            others = ", ".join(effect for effect in effects if effect != "none")
            raise ValueError(f"'none' says the tool has no effects, so it cannot be listed with {others}: keep [none] or drop it")
        return effects

    @model_validator(mode="after")
    def _otherwise_needs_when(self) -> "Tool":
        if self.otherwise is not None and not self.when:
            raise ValueError("otherwise goes with when: without argument rules, use approval (or leave the tool out to refuse it)")
        return self


ServerKind = Literal["code-exec", "filesystem", "browser", "data", "deploy", "package", "search", "memory", "other"]


class Server(SpecModel):
    """One MCP server: what runs, where, and with which privileges."""

    description: str = _doc("What the server is for.", "Fetch public documentation pages.", default="")
    kind: ServerKind = _doc("What sort of server this is; rules use it.", "search", default="other")
    trust: Literal["first-party", "vetted", "third-party"] = _doc("Who wrote the server and how far it is trusted.", "third-party", default="third-party")
    placement: Literal["agent", "dedicated", "external"] = _doc(
        "agent: inside the agent's sandbox; dedicated: its own sandbox; external: not run by us, reached over HTTP.",
        "dedicated",
        default="dedicated",
    )
    transport: StdioTransport | HttpTransport = Field(
        default_factory=StdioTransport, discriminator="type", description="How clients speak MCP to the server.", examples=[{"type": "stdio"}]
    )
    image: ImageRef | None = _doc("OCI image the server runs from.", "ghcr.io/acme/mcp-repo@sha256:4f1c...")
    package: Package | None = _doc("Package the server is installed from.", {"registry": "pypi", "name": "mcp-server-fetch", "version": "2025.4.7"})
    command: list[Arg] | str | None = _doc("Program and arguments; a single string is run by a shell.", ["mcp-server-fetch"])
    workdir: SandboxPath | None = _doc("Working directory inside the sandbox.", "/workspace")
    env: EnvPolicy | None = _doc("Environment policy (overrides defaults.env field by field).", {"inherit": "minimal"})
    runtime: Runtime | None = _doc("Runtime identity and limits (overrides defaults.runtime field by field).", {"memory": "1Gi"})
    mounts: list[Mount] = Field(default_factory=list, description="What the server sees of the workspace and host.", examples=[[{"from": "workspace.input", "to": "/workspace/input"}]])
    secrets: list[SecretBinding] = Field(default_factory=list, description="Secrets the server receives.", examples=[[{"use": "issues-ro", "as": {"env": "ISSUES_TOKEN"}}]])
    egress: Egress | None = _doc("Egress policy (overrides defaults.egress field by field).", {"allow": ["api.example.com:443"]})
    process: Process | None = _doc("Process policy (overrides defaults.process field by field).", {"allow": ["git"]})
    lifecycle: Lifecycle | None = _doc("Lifecycle (overrides defaults.lifecycle field by field).", {"idle_timeout": "10m"})
    logging: Logging | None = _doc("Logging (overrides defaults.logging field by field).", {"full_output": False})
    limits: Limits | None = _doc("Call limits (overrides defaults.limits field by field).", {"requests_per_minute": 60})
    tools: dict[ToolName, Tool] = Field(default_factory=dict, description="The server's tools and their effects.", examples=[{"fetch": {"effects": ["reads_untrusted"]}}])
    unlisted_tools: Literal["deny", "allow"] | None = _doc(
        "Tools the server offers that 'tools' does not list: deny (`mcpspec run` hides them and refuses their calls) or allow. Default deny.",
        "deny",
    )
    protocol_revisions: list[Revision] | None = Field(
        default=None,
        min_length=1,
        description=(
            "MCP protocol revisions `mcpspec run` speaks for this server, on both sides (2025-06-18, 2025-11-25, 2026-07-28);"
            " a client or server on another revision is refused with error -32022. Unset: every revision the relay speaks."
        ),
        examples=[["2025-11-25", "2026-07-28"]],
    )


_ALWAYS_APPROVE: tuple[Effect, ...] = ("deploy", "destructive", "external_send", "modify_access", "financial", "exports_data")


class Approvals(SpecModel):
    """Which tool calls need a person's approval, whatever a tool says."""

    require: list[Effect] = Field(
        default_factory=lambda: list(_ALWAYS_APPROVE),
        description="Effects whose calls always need approval.",
        examples=[["deploy", "destructive"]],
    )
    show_arguments: bool = _doc("Show the call's full arguments to the approver.", True, default=True)


class Waiver(SpecModel):
    """An accepted risk: one rule at one logical path, with a reason and an end date."""

    rule: str = Field(pattern=r"^([A-Z]{2,4}[0-9]{3}|[a-z][a-z0-9-]*)$", description="Rule ID or slug.", examples=["NW004"])
    at: str = Field(
        min_length=1,
        description="Logical path the waiver covers.",
        examples=["servers.fetch.egress.allow[1]"],
        json_schema_extra={"pattern": LOGICAL_PATH_PATTERN, "patternErrorMessage": "a logical path such as servers.fetch.egress.allow[1]"},
    )
    reason: str = Field(min_length=1, pattern=r"\S", description="Why the risk is accepted.", examples=["docs host only"])
    expires: datetime.date = Field(strict=False, description="Last day the waiver applies (YYYY-MM-DD).", examples=["2027-03-01"])


class Spec(SpecModel):
    """An mcp-sandbox.yaml file."""

    version: Literal[1] = Field(description="Version of the file format.", examples=[1])
    project: Name = _doc("Project name; prefixes generated names.", "acme-coding-agent", default=...)
    description: str = _doc("What this deployment is.", "Sandboxes for the acme coding agent.", default="")
    protocol_revision: Literal["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"] = _doc(
        "MCP revision the servers speak; some rules depend on it.", "2025-11-25", default="2025-11-25"
    )
    defaults: Defaults = Field(default_factory=Defaults, description="Section values every server inherits.", examples=[{"egress": {"default": "deny"}}])
    workspace: Workspace | None = _doc("The per-run workspace servers mount.", {"root": "/srv/mcp/workspaces"})
    agents: dict[Name, Agent] = Field(default_factory=dict, description="Model contexts and the servers each one uses.", examples=[{"coder": {"servers": ["repo", "fetch"]}}])
    secrets: dict[Name, Secret] = Field(default_factory=dict, description="Named credentials.", examples=[{"issues-ro": {"provider": "env", "ref": "ISSUES_TOKEN_RO"}}])
    images: dict[Annotated[str, Field(min_length=1, pattern=r"^[^\s\x00]+$")], ImageRef] = Field(
        default_factory=dict,
        description="Images for the container targets (compose, k8s), written once: a server that names no image of its own runs the one "
        "listed under its package's name or, failing that, under its command's program (the first word, or its last path segment).",
        examples=[{"mcp-server-fetch": "ghcr.io/acme/mcp-fetch@sha256:44e5fdaff82221d7e7630854bbf935a2503493cfdcc72f730939c8871d726700"}],
    )
    servers: dict[Name, Server] = Field(min_length=1, description="The MCP servers.", examples=[{"fetch": {"command": ["mcp-server-fetch"]}}])
    approvals: Approvals = Field(default_factory=Approvals, description="Approval policy.", examples=[{"show_arguments": True}])
    waivers: list[Waiver] = Field(default_factory=list, description="Accepted risks.", examples=[[{"rule": "NW004", "at": "servers.fetch.egress.allow[1]", "reason": "docs host only", "expires": "2027-03-01"}]])
