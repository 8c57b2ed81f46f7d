"""How `mcpspec check --within` prints its excesses: text, JSON, or SARIF through the lint writer."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mcpspec.boundary.check import KINDS, Excess
from mcpspec.diagnostics import format_path
from mcpspec.ir.plan import Plan
from mcpspec.report import sarif
from mcpspec.report.model import FileLint, LintReport
from mcpspec.rules.engine import Result

FORMATS = ("text", "json", "sarif")


def results(plan: Plan, found: Sequence[Excess]) -> list[Result]:
    """The excesses as positioned results, at the spec value that allows each."""
    return [Result(e.code, KINDS[e.code][0], "high", plan.file, plan.source.anchor_span(e.path), e.path, e.message) for e in found]


def text(plan: Plan, boundary: str, found: Sequence[Excess]) -> str:
    lines = [f"{r.file}:{r.span.line}:{r.span.col}: {r.code} {r.message}" for r in results(plan, found)]
    servers = len({e.server for e in found})
    verdict = f"{len(found)} excess{'es' if len(found) != 1 else ''} over {boundary} in {servers} server{'s' if servers != 1 else ''}" if found else f"{plan.file} stays within {boundary}"
    return "\n".join([*lines, verdict]) + "\n"


def as_json(plan: Plan, boundary: str, found: Sequence[Excess]) -> str:
    rows = [
        {"code": r.code, "slug": r.slug, "server": e.server, "file": r.file, "line": r.span.line, "col": r.span.col, "path": format_path(r.path), "message": r.message}
        for r, e in zip(results(plan, found), found, strict=True)
    ]
    return json.dumps({"spec": plan.file, "boundary": boundary, "contained": not found, "excesses": rows}, indent=2, ensure_ascii=False) + "\n"


def as_sarif(plan: Plan, boundary: str, found: Sequence[Excess]) -> str:
    log = sarif.build(LintReport([FileLint(plan.file, results(plan, found))]))
    driver = log["runs"][0]["tool"]["driver"]
    driver["rules"] = [_descriptor(rule["id"], boundary) for rule in driver["rules"]]
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _descriptor(code: str, boundary: str) -> dict[str, Any]:
    slug, summary = KINDS[code]
    return {
        "id": code,
        "name": slug,
        "shortDescription": {"text": f"Boundary excess: {summary}"},
        "fullDescription": {"text": f"The spec allows {summary}, measured against the boundary {boundary} (see docs/boundary.md)."},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["security", "boundary"], "security-severity": "8.0"},
    }


RENDERERS: dict[str, Callable[[Plan, str, Sequence[Excess]], str]] = {"text": text, "json": as_json, "sarif": as_sarif}
