"""Reading a poisoning case: what one server offers, the spec it is judged against, and what it should yield.

A case is YAML (strings in double quotes, so invisible characters are written as escapes):

    about: what it shows, and which public server's documentation the definitions follow
    server: github            # the server whose offer is checked
    spec: spec.yaml           # the spec, a file beside the case or a mapping (default: a bare one)
    tools: [...]              # as in tools/list; also prompts, resources, resource_templates
    initialize: {...}         # the pinned instructions and serverInfo, optional
    expect:                   # every finding, as RULE ITEM $.path; [] for a clean case
      - TP003 create_issue $.description

Rule docs use the same form in their Example and Use instead blocks (without `expect`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from mcpspec.api import load, load_text
from mcpspec.ir.plan import Plan
from mcpspec.poisoning.check import check_offer
from mcpspec.poisoning.context import server_context
from mcpspec.poisoning.model import Kind, PoisonFinding

ITEM_KINDS: tuple[Kind, ...] = ("tools", "prompts", "resources", "resource_templates")


@dataclass(frozen=True)
class Case:
    server: str
    plan: Plan
    items: Mapping[Kind, list[Any]]
    initialize: Mapping[str, Any] | None
    expect: list[str] | None


def parse(text: str, base: Path | None = None) -> Case:
    data = YAML(typ="safe").load(text)
    server = data["server"]
    spec = data.get("spec")
    if isinstance(spec, str):
        assert base is not None
        plan = load(base / spec)
    else:
        if spec is None:
            spec = {"version": 1, "project": "case", "servers": {server: {"command": [f"mcp-{server}"]}}}
        out = io.StringIO()
        YAML(typ="safe").dump(spec, out)
        plan = load_text(out.getvalue(), "case.yaml")
    items = {kind: list(data[kind]) for kind in ITEM_KINDS if kind in data}
    return Case(server, plan, items, data.get("initialize"), data.get("expect"))


def findings(case: Case, pinned: Mapping[str, list[str]] | None = None) -> list[PoisonFinding]:
    """What the checks find in the case's offer; ``pinned``: other servers' tool names, as a lock pins them."""
    names = dict(pinned or {})
    names[case.server] = [str(tool.get("name")) for tool in case.items.get("tools", [])]
    return check_offer(server_context(case.plan, case.server, names), case.items, case.initialize)


def lines(found: list[PoisonFinding]) -> list[str]:
    return sorted(f"{f.rule} {f.item} {f.where}" for f in found)
