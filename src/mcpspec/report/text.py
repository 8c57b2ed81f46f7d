"""Plain-text output: ``FILE:LINE:COL: ID [severity] slug: message``, a code frame,
the related places of a finding, and a one-line summary."""

from __future__ import annotations

from mcpspec.diagnostics import Span
from mcpspec.redact import redact
from mcpspec.report.model import LintReport
from mcpspec.rules.engine import Result

_COLOURS = {"error": "1;31", "critical": "1;35", "high": "31", "medium": "33", "low": "36", "info": "37"}


def render(report: LintReport, colour: bool = False) -> str:
    """The findings that count, each with its frame, then the summary."""
    out: list[str] = []
    for item in report.files:
        lines = item.text.splitlines() if item.text is not None else None
        for result in item.results:
            if result.suppression is None:
                out.append(_result(result, lines, colour))
    out.append(summary(report))
    return "\n".join(out) + "\n"


def _result(result: Result, lines: list[str] | None, colour: bool) -> str:
    severity = f"[{result.severity}]"
    if colour:
        severity = f"\x1b[{_COLOURS[result.severity]}m{severity}\x1b[0m"
    where = f"{result.file}:{result.span.line}:{result.span.col}"
    if result.severity == "error":  # a spec error, not a risk: FILE:LINE:COL: CODE message
        head = f"{where}: {result.code} {result.message}"
    else:
        head = f"{where}: {result.code} {severity} {result.slug}: {result.message}"
    out = [head, *_frame(result.span, lines)]
    for hop in result.related:
        out.append(f"    -> {result.file}:{hop.span.line}:{hop.span.col}: {hop.note}")
    return "\n".join(out)


def _frame(span: Span, lines: list[str] | None) -> list[str]:
    if lines is None or not 0 < span.line <= len(lines):
        return []
    line = redact(lines[span.line - 1].expandtabs(1))
    width = span.end_col - span.col if span.end_line == span.line and span.end_col > span.col else 1
    width = max(1, min(width, len(line) - span.col + 1))
    gutter = f"{span.line} | "
    return [f"  {gutter}{line}", f"  {' ' * (len(gutter) + span.col - 1)}{'^' * width}"]


def summary(report: LintReport) -> str:
    files = len(report.files)
    noun = "file" if files == 1 else "files"
    suppressed = len(report.results) - len(report.active)
    tail = f"; {suppressed} suppressed" if suppressed else ""
    counts = report.counts()
    if not counts:
        return f"{files} {noun} checked: no problems{tail}."
    total = sum(counts.values())
    parts = ", ".join(f"{n} {level}{'s' if level == 'error' and n != 1 else ''}" for level, n in counts.items())
    problem_files = len({r.file for r in report.active})
    return f"{total} {'problem' if total == 1 else 'problems'} ({parts}) in {problem_files} of {files} {noun}{tail}."
