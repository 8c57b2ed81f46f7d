"""Helpers the human-review rules share: which effects need a person, and how to say them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import Tool

# What a call with each effect does, as a verb phrase for messages.
EFFECT_PHRASES = {
    "deploy": "deploys",
    "destructive": "destroys data",
    "external_send": "sends data out",
    "modify_access": "changes access rights",
    "financial": "moves money",
    "exports_data": "exports data",
}


def tools(plan: Plan) -> Iterator[tuple[EffectiveSandbox, str, Tool]]:
    """Every tool of every server, external ones included: a person approves calls, wherever the server runs."""
    for server in plan.servers.values():
        for name, tool in server.tools.items():
            yield server, name, tool


def tool_path(server: EffectiveSandbox, name: str) -> SpecPath:
    return (*server.path, "tools", name)


def matching(tool: Tool, wanted: Iterable[str]) -> list[str]:
    """The tool's effects that are in ``wanted``, in the tool's order."""
    wanted = set(wanted)
    return [effect for effect in dict.fromkeys(tool.effects) if effect in wanted]


def does(effects: list[str]) -> str:
    """``deploys and destroys data``."""
    phrases = [EFFECT_PHRASES[effect] for effect in effects]
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
