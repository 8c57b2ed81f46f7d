"""Plain-text output: ``FILE:LINE:COL: ID [severity] slug: message``, a code frame,
the related places of a finding, and a one-line summary."""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterator

from mcpspec.diagnostics import Span
from mcpspec.redact import redact_range
from mcpspec.report.model import LintReport
from mcpspec.rules.engine import Result

_COLOURS = {"error": "1;31", "critical": "1;35", "high": "31", "medium": "33", "low": "36", "info": "37"}


def render(report: LintReport, colour: bool = False) -> str:
    """The findings that count, each with its frame, then the summary."""
    return findings(report, colour) + summary(report) + "\n"


def findings(report: LintReport, colour: bool = False) -> str:
    """The findings that count, each with its frame and related places (``--quiet``: this alone)."""
    return "".join(finding_texts(report, colour))


def finding_texts(report: LintReport, colour: bool = False) -> Iterator[str]:
    """:func:`findings` one finding at a time, for writing as they are formatted (lint of
    10,000 servers prints about 50 MB: never held whole, nor encoded whole)."""
    for item in report.files:
        lines = item.text.splitlines() if item.text is not None else None
        for result in item.results:
            if result.suppression is None:
                yield _result(result, lines, colour) + "\n"


def statistics(report: LintReport) -> str:
    """``--statistics``: one line per rule that found something, most findings first:
    the count, the code, the severity and the slug."""
    counted = Counter((result.code, result.severity, result.slug) for result in report.active)
    if not counted:
        return ""
    rows = sorted(counted.items(), key=lambda item: (-item[1], item[0][0]))
    width = len(str(rows[0][1]))
    return "".join(f"{count:>{width}}  {code:<5}  {f'[{severity}]':<10}  {slug}\n" for (code, severity, slug), count in rows)


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
    """The line of ``span`` (secrets masked) and carets under the span, never past the line's end
    (a span over several lines is underlined to the end of its first)."""
    if lines is None or not 0 < span.line <= len(lines):
        return []
    original = lines[span.line - 1].expandtabs(1)
    start = span.col - 1
    end = span.end_col - 1 if span.end_line == span.line and span.end_col > span.col else len(original) if span.end_line > span.line else start + 1
    line, start, end = redact_range(original, start, end)
    start = max(0, min(start, len(line)))
    end = max(start, min(end, len(line)))
    gutter = f"{span.line} | "
    carets = max(1, _width(line[start:end]))
    return [f"  {gutter}{line}", f"  {' ' * (len(gutter) + _width(line[:start]))}{'^' * carets}"]


def _width(text: str) -> int:
    """Terminal columns of ``text``: wide East Asian characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


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
