"""The report's formats by name, and the name an output file's suffix stands for."""

from __future__ import annotations

from pathlib import Path

from mcpspec.report.review.data import Review

REPORT_FORMATS = ("html", "markdown")
_SUFFIXES = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}


def format_for(name: str | None, output: Path | None) -> str:
    """``-f`` when given, else the output file's suffix, else html; ValueError names the choices."""
    if name is not None:
        if name not in REPORT_FORMATS:
            raise ValueError(f"unknown format {name!r}; choose from {', '.join(REPORT_FORMATS)}")
        return name
    if output is None:
        return "html"
    chosen = _SUFFIXES.get(output.suffix.lower())
    if chosen is None:
        raise ValueError(f"cannot tell the format from {output.name!r}: name it .html or .md, or give --format html|markdown")
    return chosen


def render_report(report: Review, name: str) -> str:
    if name == "markdown":
        from mcpspec.report.review.markdown import render_markdown

        return render_markdown(report)
    from mcpspec.report.review.html import render_html

    return render_html(report)
