"""Helpers the human-review rules share: which effects need a person, and how to say them."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from mcpspec.rules.grouping import in_full
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


def matching(tool: Tool, wanted: AbstractSet[str]) -> list[str]:
    """The tool's effects that are in ``wanted``, in the tool's order."""
    if wanted.isdisjoint(tool.effects):  # most tools: no list to build
        return []
    return [effect for effect in dict.fromkeys(tool.effects) if effect in wanted]


def does(effects: list[str]) -> str:
    """``deploys and destroys data``."""
    return in_full([EFFECT_PHRASES[effect] for effect in effects])
