"""`mcp-sandbox.lock`: what each server offered when it was reviewed, pinned whole.

The lock sits next to the spec and is reviewed like any lockfile. For each server it records
everything the client is given that can reach a model or a person: the ``instructions`` and
``serverInfo`` of its `initialize` answer, and every field of every tool, prompt, resource and
resource template it lists (descriptions, schemas, annotations, icons, ``_meta``), verbatim, as the
`mcp` SDK reads them (a key the SDK does not know is not read, and `mcpspec run` never passes it
on). `mcpspec run` compares what a server offers with it: an item that is new, or whose pinned
content changed (a rug pull), is never shown to the client, and a changed `initialize` ends the
session before it starts.

Version 1 locks pinned only tools' title, description and digests of schemas and annotations: they
are refused (by `mcpspec run` and lint) until `mcpspec lock` pins the servers again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcpspec.ir.plan import EffectiveSandbox, LockState
from mcpspec.output import write_atomically

if TYPE_CHECKING:
    # Only for types: lint reads locks without importing the SDK.
    from pydantic import BaseModel

LOCK_NAME = "mcp-sandbox.lock"
LOCK_VERSION = 2
OLD_VERSIONS = (1,)
Kind = Literal["tools", "prompts", "resources", "resource_templates"]
KINDS: tuple[Kind, ...] = ("tools", "prompts", "resources", "resource_templates")
KEY_OF: Mapping[Kind, str] = {"tools": "name", "prompts": "name", "resources": "uri", "resource_templates": "uriTemplate"}
ITEM_OF: Mapping[Kind, str] = {"tools": "tool", "prompts": "prompt", "resources": "resource", "resource_templates": "resource template"}
INITIALIZE_FIELDS = ("serverInfo", "instructions")  # what of `initialize` reaches a person or a model


class LockError(Exception):
    """The lock file cannot be read or is not one this version wrote."""


def digest(value: Any) -> str | None:
    """SHA-256 of the canonical JSON of ``value`` (sorted keys, no spaces), or None for None."""
    if value is None:
        return None
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _model(kind: Kind) -> type[BaseModel]:
    from mcp.types import Prompt, Resource, ResourceTemplate, Tool

    models: dict[Kind, type[BaseModel]] = {"tools": Tool, "prompts": Prompt, "resources": Resource, "resource_templates": ResourceTemplate}
    return models[kind]


def canonical(kind: Kind, item: Any) -> tuple[str, dict[str, Any]]:
    """An item of a listing (a model, or its JSON) as the lock pins it: its key, and every other field
    the SDK reads, as JSON (no nulls)."""
    model = _model(kind)
    parsed = item if isinstance(item, model) else model.model_validate(item)
    data = parsed.model_dump(by_alias=True, mode="json", exclude_none=True)
    key = data.pop(KEY_OF[kind])
    return str(key), data


def initialize_pin(result: Any) -> dict[str, Any]:
    """What the lock pins of an `initialize` result (an InitializeResult or its JSON)."""
    from mcp.types import InitializeResult

    parsed = result if isinstance(result, InitializeResult) else InitializeResult.model_validate(result)
    data = parsed.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {name: data[name] for name in INITIALIZE_FIELDS if name in data}


def differences(pinned: Mapping[str, Any], offered: Mapping[str, Any]) -> list[str]:
    """The fields where ``offered`` differs from ``pinned`` (a field only one has counts)."""
    return sorted(name for name in set(pinned) | set(offered) if pinned.get(name) != offered.get(name))


Verdict = Literal["pinned", "changed", "new"]


@dataclass(frozen=True, slots=True)
class ToolCheck:
    """How one offered item compares with the lock."""

    name: str
    verdict: Verdict
    changed: tuple[str, ...] = ()  # for "changed": the fields that differ


@dataclass(frozen=True)
class ServerPins:
    """What one server offered: its `initialize` fields, and each kind of item by key."""

    initialize: Mapping[str, Any] | None = None
    items: Mapping[Kind, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    accepted: tuple[str, ...] = ()  # tool-poisoning findings a reviewer accepted, as RULE:ITEM (docs/lock.md)

    def of(self, kind: Kind) -> Mapping[str, Mapping[str, Any]]:
        return self.items.get(kind, {})

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"initialize": dict(self.initialize) if self.initialize is not None else None}
        for kind in KINDS:
            pins = self.of(kind)
            out[kind] = {key: dict(pins[key]) for key in sorted(pins)}
        if self.accepted:
            out["accepted"] = sorted(self.accepted)
        return out


@dataclass(frozen=True)
class Lock:
    """Pins per server name. ``outdated``: read from a lock of an older version (it pins nothing)."""

    servers: Mapping[str, ServerPins] = field(default_factory=dict)
    outdated: int | None = None

    def pins(self, server: str, kind: Kind = "tools") -> Mapping[str, Mapping[str, Any]]:
        entry = self.servers.get(server)
        return entry.of(kind) if entry is not None else {}

    def check(self, server: str, offered: Iterable[Any], kind: Kind = "tools") -> list[ToolCheck]:
        """Compare what ``server`` offers (models or their JSON) with its pins (a server the lock does not name pins nothing)."""
        pins = self.pins(server, kind)
        checks = []
        for item in offered:
            key, data = canonical(kind, item)
            pin = pins.get(key)
            if pin is None:
                checks.append(ToolCheck(key, "new"))
                continue
            changed = differences(pin, data)
            checks.append(ToolCheck(key, "changed", tuple(changed)) if changed else ToolCheck(key, "pinned"))
        return checks

    def check_initialize(self, server: str, result: Any) -> list[str] | None:
        """The `initialize` fields that differ from the pin; None when the server has no pin."""
        entry = self.servers.get(server)
        if entry is None or entry.initialize is None:
            return None
        return differences(entry.initialize, initialize_pin(result))

    def missing(self, server: str, offered: Iterable[Any], kind: Kind = "tools") -> list[str]:
        """Pinned items the server no longer offers."""
        keys = {canonical(kind, item)[0] for item in offered}
        return sorted(set(self.pins(server, kind)) - keys)

    def with_server(self, server: str, tools: Iterable[Any], initialize: Any = None, **others: Iterable[Any]) -> Lock:
        """A lock where ``server``'s pins are exactly these (other servers kept); ``others`` by kind."""
        servers = dict(self.servers)
        listed: dict[Kind, Iterable[Any]] = {"tools": tools, **{kind: others.get(kind, ()) for kind in KINDS[1:]}}
        items = {kind: dict(canonical(kind, item) for item in values) for kind, values in listed.items()}
        servers[server] = ServerPins(initialize_pin(initialize) if initialize is not None else None, items)
        return Lock(servers)

    def with_accepted(self, server: str, accepted: Iterable[str]) -> Lock:
        """A lock where ``server`` records these accepted poisoning findings (RULE:ITEM)."""
        servers = dict(self.servers)
        servers[server] = dataclasses.replace(servers[server], accepted=tuple(sorted(set(accepted))))
        return Lock(servers)

    def accepted(self, server: str) -> tuple[str, ...]:
        entry = self.servers.get(server)
        return entry.accepted if entry is not None else ()

    def dumps(self) -> str:
        data = {"version": LOCK_VERSION, "servers": {server: pins.as_json() for server, pins in sorted(self.servers.items())}}
        return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def lock_path(spec: str | os.PathLike[str]) -> Path:
    """Where the lock of ``spec`` lives: `mcp-sandbox.lock` in the spec's directory."""
    return Path(spec).resolve().parent / LOCK_NAME


def lockable(server: EffectiveSandbox) -> bool:
    """Whether `mcpspec lock` pins ``server``: it runs on this machine, speaks stdio and lists tools."""
    return server.runs_here and server.transport.type == "stdio" and bool(server.tools)


def lock_state(spec: str | os.PathLike[str]) -> LockState:
    """The lock beside ``spec`` as lint sees it (errors name the lock by its file name only)."""
    path = lock_path(spec)
    if not path.exists():
        return LockState(None)
    try:
        lock = load_lock(path)
        return LockState(
            frozenset(lock.servers),
            tools={server: frozenset(pins.of("tools")) for server, pins in lock.servers.items()},
            arguments={server: _argument_names(pins) for server, pins in lock.servers.items()},
        )
    except LockError as exc:
        return LockState(None, str(exc).replace(str(path), LOCK_NAME))


def _argument_names(pins: ServerPins) -> dict[str, frozenset[str]]:
    """The argument names each pinned tool's inputSchema lists, unless it lists none or explicitly
    allows others (``additionalProperties`` true or a schema)."""
    out: dict[str, frozenset[str]] = {}
    for name, tool in pins.of("tools").items():
        schema = tool.get("inputSchema")
        if not isinstance(schema, Mapping):
            continue
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties and schema.get("additionalProperties", False) is False:
            out[name] = frozenset(str(key) for key in properties)
    return out


def load_lock(path: str | os.PathLike[str], outdated_ok: bool = False) -> Lock:
    """Read a lock; LockError (naming the file) when it is not valid, or is of an older version
    (unless ``outdated_ok``: then a Lock that pins nothing and says its version)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LockError(f"{path}: no lock file (run `mcpspec lock` to pin the servers' tools)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LockError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise LockError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise LockError(f"{path}:1:1: not JSON: nested too deeply") from None
    if isinstance(data, dict) and data.get("version") in OLD_VERSIONS:
        if outdated_ok:
            return Lock(outdated=int(data["version"]))
        raise LockError(
            f"{path}: a version {data['version']} lock, written by an older mcpspec: it pins only the tools' title, description, "
            f"schemas and annotations; run `mcpspec lock` to pin everything the servers offer now, and review the diff"
        )
    if not isinstance(data, dict) or data.get("version") != LOCK_VERSION or not isinstance(data.get("servers"), dict):
        raise LockError(f"{path}: not a version {LOCK_VERSION} mcpspec lock file")
    return Lock({str(server): _server(path, str(server), entry) for server, entry in data["servers"].items()})


def _server(path: str | os.PathLike[str], server: str, entry: Any) -> ServerPins:
    if not isinstance(entry, dict) or set(entry) - {"accepted"} != {"initialize", *KINDS}:
        raise LockError(f"{path}: servers.{server}: expected exactly initialize, {', '.join(KINDS)} (and accepted, if any)")
    accepted = entry.get("accepted", [])
    if not isinstance(accepted, list) or not all(isinstance(item, str) and ":" in item for item in accepted):
        raise LockError(f"{path}: servers.{server}.accepted: expected a list of RULE:ITEM strings")
    from mcpspec.poisoning.context import parse_accept

    for item in accepted:
        try:
            parse_accept(item, server)
        except ValueError as exc:
            raise LockError(f"{path}: servers.{server}.accepted: {exc}") from None
    initialize = entry["initialize"]
    if initialize is not None and (not isinstance(initialize, dict) or not set(initialize) <= set(INITIALIZE_FIELDS)):
        raise LockError(f"{path}: servers.{server}.initialize: expected null or an object of {', '.join(INITIALIZE_FIELDS)}")
    items: dict[Kind, dict[str, dict[str, Any]]] = {}
    for kind in KINDS:
        pins = entry[kind]
        if not isinstance(pins, dict) or not all(isinstance(pin, dict) for pin in pins.values()):
            raise LockError(f"{path}: servers.{server}.{kind}: expected an object of objects")
        items[kind] = {str(key): pin for key, pin in pins.items()}
    return ServerPins(initialize, items, tuple(accepted))


def write_lock(path: str | os.PathLike[str], lock: Lock) -> None:
    """Write the lock atomically (a failed write leaves the previous lock as it was)."""
    write_atomically(Path(path), lock.dumps(), 0o644)
