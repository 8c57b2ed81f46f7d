"""What the poisoning checks judge and what they report."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcpspec.spec.values import Destination

Kind = Literal["tools", "prompts", "resources", "resource_templates", "initialize"]
# How an accept names an item of each kind (a bare name is a tool).
KIND_PREFIX: Mapping[Kind, str] = {"tools": "tool", "prompts": "prompt", "resources": "resource", "resource_templates": "template", "initialize": "initialize"}
KEY_FIELD: Mapping[Kind, str] = {"tools": "name", "prompts": "name", "resources": "uri", "resource_templates": "uriTemplate", "initialize": ""}
BLOCKING = frozenset({"critical", "high"})
PathPart = str | int
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True, order=True)
class PoisonFinding:
    """One rule's finding on one string of one item a server offers."""

    server: str
    kind: Kind
    key: str  # the tool's name, the prompt's name, the resource's URI...; "" for initialize
    path: tuple[PathPart, ...]  # inside the item, as JSON
    rule: str
    message: str = field(compare=False)

    @property
    def item(self) -> str:
        """How an accept and the output name the item: a tool by its name, the others after their kind."""
        if self.kind == "initialize":
            return "initialize"
        if self.kind == "tools" and ":" not in self.key and self.key != "initialize":
            return self.key
        return f"{KIND_PREFIX[self.kind]}:{self.key}"

    @property
    def where(self) -> str:
        return json_path(self.path)

    @property
    def accept(self) -> str:
        """What `mcpspec lock --accept` takes to accept this finding."""
        return f"{self.rule}:{self.server}/{self.item}"


def json_path(path: tuple[PathPart, ...]) -> str:
    """``$.inputSchema.properties.path.description``: dotted names, other keys and indices in brackets."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.fullmatch(part):
            out += f".{part}"
        else:
            out += "[" + json.dumps(part, ensure_ascii=True) + "]"
    return out


@dataclass(frozen=True)
class ServerContext:
    """What the checks of one server's offer need from the spec and the lock."""

    server: str
    effects: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # the spec's tools and their effects
    egress_open: bool = False  # default: allow, so every host is one it may reach
    allow: tuple[Destination, ...] = ()
    deny: tuple[Destination, ...] = ()
    others: Mapping[str, frozenset[str]] = field(default_factory=dict)  # every other server -> its tool names
    peers: frozenset[str] = frozenset()  # the other servers that share an agent with this one


def strings(value: Any, path: tuple[PathPart, ...] = ()) -> Iterator[tuple[tuple[PathPart, ...], str, bool]]:
    """Every string of a JSON value: (its path, the text, whether it is an object's key)."""
    if isinstance(value, str):
        yield path, value, False
    elif isinstance(value, Mapping):
        for key, member in value.items():
            yield (*path, str(key)), str(key), True
            yield from strings(member, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, member in enumerate(value):
            yield from strings(member, (*path, index))
