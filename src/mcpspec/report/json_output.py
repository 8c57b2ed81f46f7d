"""``--format json``: every result as data, with a format version for consumers."""

from __future__ import annotations

import json
from typing import Any

from mcpspec import __version__
from mcpspec.diagnostics import format_path
from mcpspec.report.model import LintReport
from mcpspec.rules.engine import Result

FORMAT_VERSION = 1


def result_data(result: Result) -> dict[str, Any]:
    data = {
        "code": result.code,
        "slug": result.slug,
        "severity": result.severity,
        "file": result.file,
        "line": result.span.line,
        "column": result.span.col,
        "end_line": result.span.end_line,
        "end_column": result.span.end_col,
        "path": format_path(result.path),
        "message": result.message,
        "related": [
            {"line": hop.span.line, "column": hop.span.col, "path": format_path(hop.path), "note": hop.note} for hop in result.related
        ],
        "suppression": None if result.suppression is None else {"kind": result.suppression.kind, "justification": result.suppression.justification},
    }
    if result.items:  # the full list a message names in short (NW001: every metadata address left open)
        data["items"] = list(result.items)
    return data


def render(report: LintReport) -> str:
    data = {
        "format_version": FORMAT_VERSION,
        "tool": {"name": "mcpspec", "version": __version__},
        "summary": {
            "files": len(report.files),
            "problems": len(report.active),
            "suppressed": len(report.results) - len(report.active),
            "by_severity": report.counts(),
        },
        "results": [result_data(result) for result in report.results],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
