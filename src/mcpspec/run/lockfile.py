"""`mcp-sandbox.lock`: the tools each server offered when they were reviewed, pinned by content.

The lock sits next to the spec and is reviewed like any lockfile. For each server it records, per
tool, the title and description the model reads and SHA-256 digests of the input schema, the output
schema and the annotations. `mcpspec run` compares what a server offers with it: a tool that is new,
or whose pinned content changed (a rug pull), is never shown to the client.
"""

from __future__ import annotations

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
    from mcp.types import Tool

LOCK_NAME = "mcp-sandbox.lock"
LOCK_VERSION = 1


class LockError(Exception):
    """The lock file cannot be read or is not one this version wrote."""


def digest(value: Any) -> str | None:
    """SHA-256 of the canonical JSON of ``value`` (sorted keys, no spaces), or None for None."""
    if value is None:
        return None
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ToolPin:
    """What review saw of one tool."""

    name: str
    title: str | None
    description: str
    input_schema_sha256: str | None
    output_schema_sha256: str | None
    annotations_sha256: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "description": self.description,
            "input_schema_sha256": self.input_schema_sha256,
            "output_schema_sha256": self.output_schema_sha256,
            "annotations_sha256": self.annotations_sha256,
        }

    def differences(self, other: ToolPin) -> list[str]:
        """The fields (as the lock names them) where ``other`` differs from this pin."""
        mine, theirs = self.as_json(), other.as_json()
        return [key for key in mine if mine[key] != theirs[key]]


def pin_of(tool: Tool) -> ToolPin:
    """The pin of a tool as a server offers it in a `tools/list` result."""
    annotations = tool.annotations.model_dump(mode="json", exclude_none=True) if tool.annotations is not None else None
    return ToolPin(
        name=tool.name,
        title=tool.title,
        description=tool.description or "",
        input_schema_sha256=digest(tool.input_schema),
        output_schema_sha256=digest(tool.output_schema),
        annotations_sha256=digest(annotations),
    )


Verdict = Literal["pinned", "changed", "new"]


@dataclass(frozen=True, slots=True)
class ToolCheck:
    """How one offered tool compares with the lock."""

    name: str
    verdict: Verdict
    changed: tuple[str, ...] = ()  # for "changed": the fields that differ


@dataclass(frozen=True)
class Lock:
    """Pins per server name."""

    servers: Mapping[str, Mapping[str, ToolPin]] = field(default_factory=dict)

    def check(self, server: str, offered: Iterable[Tool]) -> list[ToolCheck]:
        """Compare what ``server`` offers with its pins (a server the lock does not name pins nothing)."""
        pins = self.servers.get(server, {})
        checks = []
        for tool in offered:
            pin = pins.get(tool.name)
            if pin is None:
                checks.append(ToolCheck(tool.name, "new"))
                continue
            changed = pin.differences(pin_of(tool))
            checks.append(ToolCheck(tool.name, "changed", tuple(changed)) if changed else ToolCheck(tool.name, "pinned"))
        return checks

    def missing(self, server: str, offered: Iterable[Tool]) -> list[str]:
        """Pinned tools the server no longer offers."""
        names = {tool.name for tool in offered}
        return sorted(set(self.servers.get(server, {})) - names)

    def with_server(self, server: str, tools: Iterable[Tool]) -> Lock:
        """A lock where ``server``'s pins are exactly ``tools`` (other servers kept)."""
        servers = dict(self.servers)
        servers[server] = {tool.name: pin_of(tool) for tool in tools}
        return Lock(servers)

    def dumps(self) -> str:
        data = {
            "version": LOCK_VERSION,
            "servers": {
                server: {"tools": {name: pins[name].as_json() for name in sorted(pins)}} for server, pins in sorted(self.servers.items())
            },
        }
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
        return LockState(frozenset(lock.servers), tools={server: frozenset(pins) for server, pins in lock.servers.items()})
    except LockError as exc:
        return LockState(None, str(exc).replace(str(path), LOCK_NAME))


def load_lock(path: str | os.PathLike[str]) -> Lock:
    """Read a lock; LockError (naming the file) when it is not valid."""
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
    if not isinstance(data, dict) or data.get("version") != LOCK_VERSION or not isinstance(data.get("servers"), dict):
        raise LockError(f"{path}: not a version {LOCK_VERSION} mcpspec lock file")
    servers: dict[str, dict[str, ToolPin]] = {}
    for server, entry in data["servers"].items():
        tools = entry.get("tools") if isinstance(entry, dict) else None
        if not isinstance(tools, dict):
            raise LockError(f"{path}: servers.{server}: expected an object with 'tools'")
        servers[server] = {name: _pin(path, server, name, value) for name, value in tools.items()}
    return Lock(servers)


_PIN_FIELDS = ("title", "description", "input_schema_sha256", "output_schema_sha256", "annotations_sha256")


def _pin(path: str | os.PathLike[str], server: str, name: str, value: Any) -> ToolPin:
    if not isinstance(value, dict) or set(value) != set(_PIN_FIELDS):
        raise LockError(f"{path}: servers.{server}.tools.{name}: expected exactly {', '.join(_PIN_FIELDS)}")
    if not isinstance(value["description"], str) or not all(value[key] is None or isinstance(value[key], str) for key in _PIN_FIELDS):
        raise LockError(f"{path}: servers.{server}.tools.{name}: every field is a string or null")
    return ToolPin(name, value["title"], value["description"], value["input_schema_sha256"], value["output_schema_sha256"], value["annotations_sha256"])


def write_lock(path: str | os.PathLike[str], lock: Lock) -> None:
    """Write the lock atomically (a failed write leaves the previous lock as it was)."""
    write_atomically(Path(path), lock.dumps(), 0o644)
