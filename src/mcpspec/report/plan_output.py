"""The Plan as data, every resolved value with the spec path that set it.

Each leaf is ``{"value": ..., "from": ...}``; ``from`` is a logical path of the
file (``servers.repo.egress.default``, ``defaults.egress.default``,
``workspace.dirs.tmp.size``) or ``default`` for a built-in default nobody wrote.
Sizes are bytes, durations seconds, egress entries their spec text. Secrets show
their provider and reference (where the value is read; per target when a target has a source
of its own), never a value.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from mcpspec.diagnostics import SpecPath, format_path
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, HostPath, LogSink, Plan, SecretGrant
from mcpspec.spec.conditions import ArgRule
from mcpspec.spec.models import SOURCE_TARGETS, SpecModel, Workspace
from mcpspec.spec.values import Destination

DEFAULT = "default"
# Plan fields whose spec key differs (the rest are spelled as in the spec).
_SPEC_KEY = {"identity.uid": "runtime.user", "identity.gid": "runtime.group", "read_only_root": "runtime.read_only_root"}
_SPEC_SECTION = {"resources": "runtime"}
# The sections of a server, in the order they are printed.
_SECTIONS = ("identity", "resources", "read_only_root", "env", "egress", "process", "lifecycle", "logging", "limits")
_SERVER_KEYS = ("description", "kind", "trust", "placement", "image", "package", "command", "workdir", "unlisted_tools")


def leaf(value: Any, origin: SpecPath | None) -> dict[str, Any]:
    return {"value": plain(value), "from": DEFAULT if origin is None else format_path(origin)}


def plain(value: Any) -> Any:
    """A Plan value as JSON data."""
    if isinstance(value, Destination | HostPath):
        return str(value)
    if isinstance(value, LogSink):
        return {"kind": value.kind, "path": None if value.path is None else str(value.path)}
    if isinstance(value, ArgRule):  # as written: a test's unused matchers would only be noise
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, SpecModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def plan_data(plan: Plan) -> dict[str, Any]:
    spec = plan.spec
    written = spec.model_fields_set
    return {
        "file": plan.file,
        "project": leaf(plan.project, ("project",)),
        "protocol_revision": leaf(plan.protocol_revision, ("protocol_revision",) if "protocol_revision" in written else None),
        "agents": {name: leaf(members, ("agents", name, "servers")) for name, members in plan.agents.items()},
        "workspace": None if plan.workspace is None else workspace_data(plan.workspace),
        "approvals": model_leaves(plan.approvals, ("approvals",) if "approvals" in written else None),
        "servers": {name: server_data(sandbox, spec.secrets) for name, sandbox in plan.servers.items()},
    }


def workspace_data(workspace: Workspace) -> dict[str, Any]:
    out = model_leaves(workspace, ("workspace",))
    out["dirs"] = {name: model_leaves(directory, ("workspace", "dirs", name)) for name, directory in workspace.dirs.items()}
    return out


def server_data(sandbox: EffectiveSandbox, secrets: Mapping[str, SpecModel]) -> dict[str, Any]:
    out: dict[str, Any] = {key: leaf(getattr(sandbox, key), sandbox.origins.get(key)) for key in _SERVER_KEYS}
    written = {name: secret.model_fields_set for name, secret in secrets.items()}
    transport = sandbox.transport
    out["transport"] = {key: leaf(getattr(transport, key), sandbox.origins.get(f"transport.{key}")) for key in type(transport).model_fields}
    for section in _SECTIONS:
        out[section] = _section(getattr(sandbox, section), section, sandbox.origins)
    out["mounts"] = [mount_data(mount) for mount in sandbox.mounts]
    out["secrets"] = [secret_data(grant, written) for grant in sandbox.secrets]
    out["tools"] = {name: model_leaves(tool, (*sandbox.path, "tools", name)) for name, tool in sandbox.tools.items()}
    return out


def _section(value: Any, dotted: str, origins: Mapping[str, SpecPath]) -> Any:
    """A section of the Plan, each leaf with the origin of its spec key."""
    if dataclasses.is_dataclass(value) and not isinstance(value, LogSink):
        return {
            f.name: _section(getattr(value, f.name), f"{dotted}.{f.name}", origins) for f in dataclasses.fields(value) if not f.metadata.get("internal")
        }
    return leaf(value, origins.get(spec_key(dotted)))


def spec_key(dotted: str) -> str:
    """The spec key (``runtime.memory``) of a Plan field (``resources.memory``)."""
    if dotted in _SPEC_KEY:
        return _SPEC_KEY[dotted]
    head, _, rest = dotted.partition(".")
    return f"{_SPEC_SECTION[head]}.{rest}" if head in _SPEC_SECTION else dotted


def model_leaves(model: SpecModel, path: SpecPath | None) -> dict[str, Any]:
    """A spec model's fields; a field is from ``path`` when the file wrote it there."""
    written = model.model_fields_set if path is not None else set()
    out = {}
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        out[key] = leaf(getattr(model, name), (*path, key) if path is not None and name in written else None)
    return out


def mount_data(mount: EffectiveMount) -> dict[str, Any]:
    origin = mount.path
    out = {
        "kind": leaf(mount.kind, (*origin, "from")),
        "source": leaf(mount.source, (*origin, "from")),
        "target": leaf(mount.target, (*origin, "to")),
        "mode": leaf(mount.mode, mount.origins.get("mode")),
    }
    if mount.kind == "tmpfs":
        out["size"] = leaf(mount.size, mount.origins.get("size"))
    return out


def secret_data(grant: SecretGrant, written: Mapping[str, set[str]]) -> dict[str, Any]:
    secret = grant.secret_path
    fields = written.get(grant.name, set())
    out = {
        "name": leaf(grant.name, (*grant.path, "use")),
        "provider": leaf(grant.provider, (*secret, "provider")),
        "ref": leaf(grant.ref, (*secret, "ref")),
        "scopes": leaf(grant.scopes, (*secret, "scopes") if "scopes" in fields else None),
        "ttl": leaf(grant.ttl, (*secret, "ttl") if "ttl" in fields else None),
    }
    form = "env" if grant.env is not None else "file"
    out[form] = leaf(grant.env if grant.env is not None else grant.file, (*grant.path, "as", form))
    if grant.sources:
        # Which source each target reads: its own under `sources`, or the default above.
        out["sources"] = {target: _source(grant.for_target(target)) for target in SOURCE_TARGETS}
    return out


def _source(grant: SecretGrant) -> dict[str, Any]:
    return {"provider": leaf(grant.provider, (*grant.secret_path, "provider")), "ref": leaf(grant.ref, (*grant.secret_path, "ref"))}


def render_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_yaml(data: dict[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000))
