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
Checked = Sequence[tuple[Plan, Sequence[Excess]]]  # each spec file and its excesses


def results(plan: Plan, found: Sequence[Excess]) -> list[Result]:
    """The excesses as positioned results, at the spec value that allows each."""
    return [Result(e.code, KINDS[e.code][0], "high", plan.file, plan.source.anchor_span(e.path), e.path, e.message) for e in found]


def text(checked: Checked, boundary: str) -> str:
    lines: list[str] = []
    for plan, found in checked:
        lines += [f"{r.file}:{r.span.line}:{r.span.col}: {r.code} {r.message}" for r in results(plan, found)]
        servers = len({e.server for e in found})
        s = "s" if servers != 1 else ""
        lines.append(f"{plan.file}: {len(found)} excess{'es' if len(found) != 1 else ''} over {boundary} in {servers} server{s}" if found else f"{plan.file} stays within {boundary}")
    return "\n".join(lines) + "\n"


def as_json(checked: Checked, boundary: str) -> str:
    rows = [
        {"code": r.code, "slug": r.slug, "server": e.server, "file": r.file, "line": r.span.line, "col": r.span.col, "path": format_path(r.path), "message": r.message}
        for plan, found in checked
        for r, e in zip(results(plan, found), found, strict=True)
    ]
    specs = [plan.file for plan, _ in checked]
    return json.dumps({"specs": specs, "boundary": boundary, "contained": not rows, "excesses": rows}, indent=2, ensure_ascii=False) + "\n"


def as_sarif(checked: Checked, boundary: str) -> str:
    log = sarif.build(LintReport([FileLint(plan.file, results(plan, found)) for plan, found in checked]))
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


RENDERERS: dict[str, Callable[[Checked, str], str]] = {"text": text, "json": as_json, "sarif": as_sarif}
