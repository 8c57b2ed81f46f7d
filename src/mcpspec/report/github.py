"""``--format github``: workflow commands that GitHub Actions shows as annotations.

GitHub shows at most 10 error, 10 warning and 10 notice annotations per step
and drops the rest silently, so the most severe come first and a final notice
says how many were left out.
"""

from __future__ import annotations

from collections import Counter

from mcpspec.report.model import FAIL_ORDER, LintReport

_COMMAND = {"error": "error", "critical": "error", "high": "error", "medium": "warning", "low": "notice", "info": "notice"}
PER_STEP_CAP = 10


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: LintReport) -> str:
    active = sorted(report.active, key=lambda r: (FAIL_ORDER.index(r.severity), r.file, r.span.line, r.span.col))
    lines: list[str] = []
    shown: Counter[str] = Counter()
    dropped = 0
    for result in active:
        command = _COMMAND[result.severity]
        if shown[command] >= PER_STEP_CAP:
            dropped += 1
            continue
        shown[command] += 1
        span = result.span
        props = (
            f"file={_property(result.file)},line={span.line},col={span.col},endLine={span.end_line},endColumn={span.end_col},"
            f"title={_property(f'{result.code} {result.slug} [{result.severity}]')}"
        )
        lines.append(f"::{command} {props}::{_data(result.message)}")
    if dropped:
        lines.append(
            f"::notice::{dropped} more findings were not annotated: GitHub shows at most {PER_STEP_CAP} errors, "
            f"{PER_STEP_CAP} warnings and {PER_STEP_CAP} notices per step; use --format sarif or text for the full list"
        )
    from mcpspec.report.text import summary

    lines.append(summary(report))
    return "\n".join(lines) + "\n"
