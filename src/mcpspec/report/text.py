"""Plain-text diagnostics: ``FILE:LINE:COL: CODE message`` and a code frame."""

from __future__ import annotations

from collections.abc import Iterable

from mcpspec.diagnostics import Diagnostic


def render_diagnostic(diagnostic: Diagnostic, source_text: str | None) -> str:
    """The diagnostic line, then the source line with a caret under the span."""
    out = [diagnostic.format()]
    if source_text is not None:
        lines = source_text.splitlines()
        span = diagnostic.span
        if 0 < span.line <= len(lines):
            line = lines[span.line - 1].expandtabs(1)
            width = span.end_col - span.col if span.end_line == span.line and span.end_col > span.col else 1
            width = max(1, min(width, len(line) - span.col + 1))
            gutter = f"{span.line} | "
            out.append(f"  {gutter}{line}")
            out.append(f"  {' ' * (len(gutter) + span.col - 1)}{'^' * width}")
    return "\n".join(out)


def render_summary(files: int, diagnostics: Iterable[Diagnostic]) -> str:
    counted = list(diagnostics)
    noun = "file" if files == 1 else "files"
    if not counted:
        return f"{files} {noun} checked: no problems."
    problem_files = len({d.file for d in counted})
    problems = "problem" if len(counted) == 1 else "problems"
    return f"{len(counted)} {problems} in {problem_files} of {files} {noun}."
