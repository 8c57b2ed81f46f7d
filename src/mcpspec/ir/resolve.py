"""Resolve a validated Spec into a Plan: defaults, workspace dirs, secrets, references.

Section values (runtime, env, egress, process, lifecycle, logging, limits)
merge field by field: a field the server writes wins over the same field in
``defaults``, which wins over the built-in default. Nested sections merge the
same way. Lists and mappings are values, not merged: a server's ``allow`` list
replaces the default one.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import Any, Literal, NamedTuple, TypeVar

from mcpspec.diagnostics import Diagnostic, SpecError, SpecPath, format_path
from mcpspec.ir import sections as final
from mcpspec.ir.plan import AGENT_TOKEN, RUN_TOKEN, EffectiveMount, EffectiveSandbox, HostPath, LogSink, Plan, SecretGrant, SecretSource, host_path
from mcpspec.ir.sections import BUILTIN, DEFAULT_SCRATCH, SECTIONS
from mcpspec.revisions import RELAYED
from mcpspec.source.sourcemap import SourceMap
from mcpspec.spec.errors import INCONSISTENT, INVALID_VALUE, UNRESOLVED_REFERENCE
from mcpspec.spec.models import (
    EnvPolicy,
    HttpTransport,
    Lifecycle,
    Mount,
    Process,
    Secret,
    Server,
    Spec,
    SpecModel,
    Workspace,
)
from mcpspec.spec.patterns import SECRET_REF_PATTERNS
from mcpspec.spec.values import normalize_host_path, normalize_sandbox_path

M = TypeVar("M", bound=SpecModel)

# Server keys outside the merged sections whose origin the Plan records when written.
_SERVER_KEYS = ("description", "kind", "trust", "placement", "image", "package", "command", "workdir", "unlisted_tools", "protocol_revisions")

# The same expressions as the JSON Schema's (mcpspec.spec.patterns), so editors agree.
_SECRET_REF = {
    "env": (re.compile(SECRET_REF_PATTERNS["env"]), "an environment variable name such as ISSUES_TOKEN"),
    "vault": (re.compile(SECRET_REF_PATTERNS["vault"]), "a vault path with an optional #field, such as kv/deploy#token"),
    "k8s-secret": (re.compile(SECRET_REF_PATTERNS["k8s-secret"]), "a Kubernetes secret and key as name#key"),
    "systemd-credential": (re.compile(SECRET_REF_PATTERNS["systemd-credential"]), "a credential name of letters, digits, '_', '.' and '-'"),
}


class _DirFacts(NamedTuple):
    """What every mount of one workspace dir shares: its kind, host location and size, and the
    spec paths that set the dir's mode and size (None: not written there)."""

    kind: Literal["workspace", "tmpfs"]
    location: str
    size: int
    mode_origin: SpecPath | None
    size_origin: SpecPath | None

    @classmethod
    def of(cls, workspace: Workspace, dir_name: str) -> _DirFacts:
        directory = workspace.dirs[dir_name]
        run_dir = f"{workspace.root}/{AGENT_TOKEN}/{RUN_TOKEN}" if workspace.per_agent else f"{workspace.root}/{RUN_TOKEN}"
        dir_path: SpecPath = ("workspace", "dirs", dir_name)
        return cls(
            kind="tmpfs" if directory.tmpfs else "workspace",
            location=f"{run_dir}/{dir_name}",
            size=(directory.size or DEFAULT_SCRATCH) if directory.tmpfs else 0,
            mode_origin=(*dir_path, "mode") if "mode" in directory.model_fields_set else None,
            size_origin=(*dir_path, "size") if directory.tmpfs and directory.size is not None else None,
        )


class _Resolver:
    def __init__(self, spec: Spec, source: SourceMap) -> None:
        self.spec = spec
        self.source = source
        self.errors: list[Diagnostic] = []
        self.file_sources: dict[SpecPath, HostPath] = {}  # a file source's spec path -> where its value is read
        self.dir_facts: dict[str, _DirFacts] = {}  # workspace dir name -> what its mounts share

    def error(self, code: str, path: SpecPath, message: str, on_key: bool = False) -> None:
        span = self.source.key_span(path) if on_key else self.source.value_span(path)
        self.errors.append(Diagnostic(self.source.file, span, code, message, path))

    @functools.cached_property
    def defaults(self) -> tuple[dict[str, Any], dict[str, SpecPath]]:
        """Built-in defaults overlaid with the file's ``defaults``, computed once for all servers."""
        origins: dict[str, SpecPath] = {}
        sections: dict[str, Any] = {}
        for section in SECTIONS:
            layer = getattr(self.spec.defaults, section)
            sections[section] = BUILTIN[section] if layer is None else _merge(BUILTIN[section], layer, ("defaults", section), section, origins)
        return sections, origins

    def resolve(self) -> Plan:
        spec = self.spec
        self.check_secrets()
        self.check_workspace()
        self.check_lifecycle(("defaults", "lifecycle"), spec.defaults.lifecycle)
        agents = self.resolve_agents()
        memberships: dict[str, list[str]] = {name: [] for name in spec.servers}
        for agent, members in agents.items():
            for member in members:
                memberships.setdefault(member, []).append(agent)
        servers = {
            name: self.resolve_server(name, server, tuple(memberships.get(name, ())))
            for name, server in spec.servers.items()
        }
        self.check_waivers()
        if self.errors:
            self.errors.sort(key=lambda d: (d.span.line, d.span.col))
            raise SpecError(self.errors)
        return Plan(
            file=self.source.file,
            spec=spec,
            source=self.source,
            servers=servers,
            agents=agents,
            workspace=spec.workspace,
            approvals=spec.approvals,
            waivers=tuple(spec.waivers),
        )

    # --- top-level sections ---

    def check_secrets(self) -> None:
        for name, secret in self.spec.secrets.items():
            self.check_source(("secrets", name), secret.provider, secret.ref)
            for target, source in secret.sources.items():
                self.check_source(("secrets", name, "sources", target), source.provider, source.ref)

    def check_source(self, at: SpecPath, provider: str, ref: str) -> None:
        """Check one source's reference; a file source's host path is kept for its grants."""
        path: SpecPath = (*at, "ref")
        if provider == "file":
            try:
                self.file_sources[at] = host_path(normalize_host_path(ref))
            except ValueError as exc:
                self.error(INVALID_VALUE, path, f"{format_path(path)}: {exc}")
            return
        pattern, hint = _SECRET_REF[provider]
        if not pattern.fullmatch(ref):
            self.error(INVALID_VALUE, path, f"{format_path(path)}: provider {provider} needs {hint}, got {ref!r}")

    def check_workspace(self) -> None:
        workspace = self.spec.workspace
        if workspace is None:
            return
        for name, directory in workspace.dirs.items():
            if directory.size is not None and not directory.tmpfs:
                self.error(INCONSISTENT, ("workspace", "dirs", name, "size"),
                           f"workspace.dirs.{name}.size: only a tmpfs directory can be size-limited; add 'tmpfs: true' or drop 'size'", on_key=True)

    def check_lifecycle(self, path: SpecPath, lifecycle: Lifecycle | None) -> None:
        """A sandbox starts from a template or from a snapshot (the schema says so too)."""
        if lifecycle is not None and lifecycle.template is not None and lifecycle.snapshot is not None:
            self.error(INCONSISTENT, (*path, "snapshot"), "give either 'template' or 'snapshot', not both", on_key=True)

    def resolve_agents(self) -> dict[str, tuple[str, ...]]:
        agents: dict[str, tuple[str, ...]] = {}
        for name, agent in self.spec.agents.items():
            seen: set[str] = set()
            for index, server in enumerate(agent.servers):
                path: SpecPath = ("agents", name, "servers", index)
                if server not in self.spec.servers:
                    self.error(UNRESOLVED_REFERENCE, path, f"agent {name!r} uses server {server!r}, which is not defined under 'servers'{_known(self.spec.servers)}")
                elif server in seen:
                    self.error(INCONSISTENT, path, f"agent {name!r} lists server {server!r} twice")
                seen.add(server)
            agents[name] = tuple(s for s in dict.fromkeys(agent.servers) if s in self.spec.servers)
        return agents

    def check_waivers(self) -> None:
        from mcpspec.diagnostics import parse_path

        for index, waiver in enumerate(self.spec.waivers):
            path: SpecPath = ("waivers", index, "at")
            try:
                target = parse_path(waiver.at)
            except ValueError as exc:
                self.error(INVALID_VALUE, path, f"waivers[{index}].at: {exc}")
                continue
            if target not in self.source:
                self.error(UNRESOLVED_REFERENCE, path, f"waiver points at {waiver.at}, which is not in this file")

    # --- servers ---

    def resolve_server(self, name: str, server: Server, agents: tuple[str, ...]) -> EffectiveSandbox:
        base: SpecPath = ("servers", name)
        defaults, default_origins = self.defaults
        origins = dict(default_origins)
        sections: dict[str, Any] = {}
        for section in SECTIONS:
            own = getattr(server, section)
            sections[section] = defaults[section] if own is None else _merge(defaults[section], own, (*base, section), section, origins)
        sink = self.check_server(name, server, sections["logging"].sink, origins)
        self.record_server_origins(base, server, origins)
        command: tuple[str, ...] = ()
        is_shell = isinstance(server.command, str)
        if isinstance(server.command, str):
            command = ("/bin/sh", "-c", server.command)
        elif server.command is not None:
            command = tuple(server.command)
        return EffectiveSandbox(
            name=name,
            path=base,
            description=server.description,
            kind=server.kind,
            trust=server.trust,
            placement=server.placement,
            transport=self.resolve_transport(name, server),
            image=self.resolve_image(server, origins),
            package=server.package,
            command=command,
            command_is_shell=is_shell,
            workdir=server.workdir,
            agents=agents,
            identity=final.identity(sections["runtime"]),
            resources=final.resources(sections["runtime"]),
            read_only_root=sections["runtime"].read_only_root is not False,
            env=final.env(sections["env"]),
            egress=final.egress(sections["egress"]),
            process=final.process(self.resolve_process(name, sections["process"], origins)),
            lifecycle=final.lifecycle(sections["lifecycle"]),
            logging=final.logging(sections["logging"], sink),
            limits=final.limits(sections["limits"]),
            mounts=self.resolve_mounts(name, server),
            secrets=self.resolve_secrets(name, server, sections["env"]),
            tools=dict(server.tools),
            unlisted_tools=server.unlisted_tools or "deny",
            protocol_revisions=tuple(server.protocol_revisions) if server.protocol_revisions is not None else RELAYED,
            origins=origins,
        )

    def resolve_image(self, server: Server, origins: dict[str, SpecPath]) -> str | None:
        """The server's own image, else the top-level ``images`` entry of its package or its program."""
        if server.image is not None or server.placement == "external" or not self.spec.images:
            return server.image
        program = server.command[0] if isinstance(server.command, list) and server.command else None
        keys = [server.package.name if server.package is not None else None, program, program.rpartition("/")[2] if program else None]
        for key in keys:
            if key is not None and key in self.spec.images:
                origins["image"] = ("images", key)
                return self.spec.images[key]
        return None

    def record_server_origins(self, base: SpecPath, server: Server, origins: dict[str, SpecPath]) -> None:
        """Origins of the server's own keys, and of the gid that follows the uid."""
        written = server.model_fields_set
        origins.update({key: (*base, key) for key in _SERVER_KEYS if key in written})
        if "transport" in written:
            origins["transport"] = (*base, "transport")
            origins.update({f"transport.{key}": (*base, "transport", key) for key in server.transport.model_fields_set})
        if "runtime.group" not in origins and "runtime.user" in origins:
            origins["runtime.group"] = origins["runtime.user"]

    def check_server(self, name: str, server: Server, sink_text: str | None, origins: dict[str, SpecPath]) -> LogSink:
        """Check what only the whole server can tell; returns its audit sink."""
        base: SpecPath = ("servers", name)
        written = server.model_fields_set
        if server.placement == "external":
            if not isinstance(server.transport, HttpTransport) or server.transport.url is None:
                self.error(INCONSISTENT, (*base, "transport"),
                           f"server {name!r} is external: give 'transport: {{type: http, url: https://...}}' so clients can reach it", on_key="transport" in written)
            for key in ("image", "package", "command", "workdir", "mounts", "runtime", "process"):
                if key in written:
                    self.error(INCONSISTENT, (*base, key),
                               f"server {name!r} is external (mcpspec does not run it), so '{key}' would have no effect; remove it or change placement", on_key=True)
        elif server.command is None and server.image is None:
            self.error(INCONSISTENT, base, f"server {name!r} needs 'command' (argv to launch) or 'image'", on_key=True)
        self.check_lifecycle((*base, "lifecycle"), server.lifecycle)
        try:
            return final.sink(sink_text)
        except ValueError as exc:
            self.error(INVALID_VALUE, origins.get("logging.sink", (*base, "logging", "sink")), f"logging.sink must be stderr, journal or an absolute path: {exc}")
            return LogSink("stderr")

    def resolve_transport(self, name: str, server: Server) -> Any:
        transport = server.transport
        if not isinstance(transport, HttpTransport):
            return transport
        path: SpecPath = ("servers", name, "transport")
        if transport.bind is not None:
            try:
                ipaddress.ip_address(transport.bind)
            except ValueError:
                self.error(INVALID_VALUE, (*path, "bind"), f"transport.bind must be an IP address such as 127.0.0.1, got {transport.bind!r}")
        if server.placement != "external" and transport.port is None:
            self.error(INCONSISTENT, path, f"server {name!r} serves HTTP: give the 'port' it listens on", on_key=True)
        if transport.bind is None and server.placement != "external":
            return transport.model_copy(update={"bind": "127.0.0.1"})
        return transport

    def resolve_process(self, name: str, process: Process, origins: dict[str, SpecPath]) -> Process:
        cache = process.package_install.cache if process.package_install is not None else None
        if cache is not None:
            path = origins.get("process.package_install.cache", ("servers", name, "process", "package_install", "cache"))
            if cache.startswith("workspace."):
                self.workspace_dir(cache, path)
            else:
                try:
                    normalize_sandbox_path(cache)
                except ValueError as exc:
                    self.error(INVALID_VALUE, path, f"package_install.cache must be workspace.<dir> or an absolute path: {exc}")
        return process

    def workspace_dir(self, reference: str, path: SpecPath) -> Any:
        workspace = self.spec.workspace
        dir_name = reference.removeprefix("workspace.")
        if workspace is None:
            self.error(UNRESOLVED_REFERENCE, path, f"{reference!r} needs a top-level 'workspace' section, and this file has none")
            return None
        if dir_name not in workspace.dirs:
            self.error(UNRESOLVED_REFERENCE, path, f"workspace has no dir {dir_name!r}{_known(workspace.dirs)}")
            return None
        return workspace.dirs[dir_name]

    def resolve_mounts(self, name: str, server: Server) -> tuple[EffectiveMount, ...]:
        mounts: list[EffectiveMount] = []
        targets: dict[str, int] = {}
        for index, mount in enumerate(server.mounts):
            path: SpecPath = ("servers", name, "mounts", index)
            if mount.to in targets:
                self.error(INCONSISTENT, (*path, "to"), f"mounts[{targets[mount.to]}] already mounts something at {mount.to}")
            targets[mount.to] = index
            resolved = self.workspace_mount(mount, path) if mount.from_.startswith("workspace.") else self.host_mount(mount, path)
            if resolved is not None:
                mounts.append(resolved)
        return tuple(mounts)

    def workspace_mount(self, mount: Mount, path: SpecPath) -> EffectiveMount | None:
        directory = self.workspace_dir(mount.from_, (*path, "from"))
        if directory is None:
            return None
        dir_name = mount.from_.removeprefix("workspace.")
        if mount.mode == "rw" and directory.mode == "ro":
            self.error(INCONSISTENT, (*path, "mode"), f"workspace.dirs.{dir_name} is read-only; a mount cannot make it writable")
        facts = self.workspace_dir_facts(dir_name)
        origins: dict[str, SpecPath] = {}
        if mount.mode is not None:
            origins["mode"] = (*path, "mode")
        elif facts.mode_origin is not None:
            origins["mode"] = facts.mode_origin
        if facts.size_origin is not None:
            origins["size"] = facts.size_origin
        return EffectiveMount(
            kind=facts.kind, source=dir_name, target=mount.to, mode=mount.mode or directory.mode,
            path=path, location=facts.location, size=facts.size, origins=origins,
        )

    def workspace_dir_facts(self, dir_name: str) -> _DirFacts:
        """What every mount of one existing workspace dir shares, worked out once per dir."""
        facts = self.dir_facts.get(dir_name)
        if facts is None:
            workspace = self.spec.workspace
            assert workspace is not None
            facts = self.dir_facts[dir_name] = _DirFacts.of(workspace, dir_name)
        return facts

    def host_mount(self, mount: Mount, path: SpecPath) -> EffectiveMount | None:
        try:
            location = normalize_host_path(mount.from_)
        except ValueError as exc:
            self.error(INVALID_VALUE, (*path, "from"), f"{format_path((*path, 'from'))}: {exc}")
            return None
        source = host_path(location)
        return EffectiveMount(
            kind="home" if source.in_home else "host", source=source.path, target=mount.to, mode=mount.mode or "ro",
            path=path, location=location, origins={"mode": (*path, "mode")} if mount.mode is not None else {},
        )

    def resolve_secrets(self, name: str, server: Server, env: EnvPolicy) -> tuple[SecretGrant, ...]:
        grants: list[SecretGrant] = []
        env_names: dict[str, SpecPath] = {key: ("servers", name, "env", "set", key) for key in (env.set or {})}
        for index, binding in enumerate(server.secrets):
            path: SpecPath = ("servers", name, "secrets", index)
            secret: Secret | None = self.spec.secrets.get(binding.use)
            if secret is None:
                self.error(UNRESOLVED_REFERENCE, (*path, "use"), f"server {name!r} uses secret {binding.use!r}, which is not defined under 'secrets'{_known(self.spec.secrets)}")
                continue
            form = binding.as_
            if form.env is not None:
                if form.env in env_names:
                    self.error(INCONSISTENT, (*path, "as", "env"), f"{form.env} is already set by {format_path(env_names[form.env])}")
                env_names[form.env] = (*path, "as", "env")
            at: SpecPath = ("secrets", binding.use)
            sources: dict[str, SecretSource] = {
                target: SecretSource(own.provider, own.ref, (*at, "sources", target), self.file_sources.get((*at, "sources", target)))
                for target, own in secret.sources.items()
            }
            grants.append(SecretGrant(
                name=binding.use, provider=secret.provider, ref=secret.ref, scopes=secret.scope_list, ttl=secret.ttl_seconds,
                env=form.env, file=form.file, path=path, secret_path=at, source=self.file_sources.get(at), sources=sources,
            ))
        return tuple(grants)


def _merge(base: M, layer: M, path: SpecPath, prefix: str, origins: dict[str, SpecPath]) -> M:
    """Overlay the fields ``layer`` sets onto ``base``, recording where each came from."""
    keys = _field_keys(type(base))
    changes: dict[str, Any] = {}
    for name in layer.model_fields_set:
        key = keys[name]
        value = getattr(layer, name)
        current = getattr(base, name)
        dotted = f"{prefix}.{key}"
        if isinstance(value, SpecModel) and isinstance(current, SpecModel):
            value = _merge(current, value, (*path, key), dotted, origins)
        elif value is None and isinstance(current, SpecModel):
            value = current
        changes[name] = value
        origins[dotted] = (*path, key)
    # A copy with the changed fields replaced: the merged section is read field by field, never
    # asked which fields were set, and copying skips the per-field work of model_construct.
    return base.model_copy(update=changes)


@functools.cache
def _field_keys(model: type[SpecModel]) -> dict[str, str]:
    """Field name -> the key users write (its alias, if any)."""
    return {name: field.alias or name for name, field in model.model_fields.items()}


def _known(names: Any) -> str:
    listed = sorted(names)
    return f" (defined: {', '.join(listed)})" if listed else ""


def resolve(spec: Spec, source: SourceMap) -> Plan:
    """Build the Plan, or raise SpecError with every unresolved reference and inconsistency."""
    return _Resolver(spec, source).resolve()

