"""Which report format an ``-f`` name or an output file's suffix stands for (the formats
themselves are in :mod:`mcpspec.report.renderers`)."""

from __future__ import annotations

from pathlib import Path

from mcpspec.report.renderers import REPORT_FORMATS, UnknownFormat, report_renderer
from mcpspec.report.review.data import Review

_SUFFIXES = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}


def format_for(name: str | None, output: Path | None) -> str:
    """``-f`` when given, else the output file's suffix, else html; UnknownFormat names the choices."""
    if name is not None:
        report_renderer(name)
        return name
    if output is None:
        return "html"
    chosen = _SUFFIXES.get(output.suffix.lower())
    if chosen is None:
        raise UnknownFormat(f"cannot tell the format from {output.name!r}: name it .html or .md, or give --format {'|'.join(REPORT_FORMATS)}")
    return chosen


def render_report(report: Review, name: str, max_chars: int | None = None) -> str:
    """The report in format ``name``; ``max_chars`` caps the Markdown (default its MAX_CHARS)."""
    if max_chars is not None and name == "markdown":
        from mcpspec.report.review.markdown import render_markdown

        return render_markdown(report, max_chars)
    return report_renderer(name)(report)
