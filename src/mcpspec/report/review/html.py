"""The report as one self-contained HTML page: inline CSS and SVG, nothing fetched.

Rendered through jinja2 with autoescaping on for every value, and a Content Security
Policy that allows no script and no network request: a name or description in the spec
can neither add markup nor run code. Every printed string is masked once more by
:func:`mcpspec.redact.redact`, so no secret-shaped value reaches the page.
"""

from __future__ import annotations

import functools
from typing import Any

import jinja2

from mcpspec.redact import redact
from mcpspec.report.review.data import Review
from mcpspec.report.review.layout import Picture, lay_out


def _finalize(value: Any) -> Any:
    """Mask every printed string; a macro's output (Markup) was masked part by part already."""
    if not isinstance(value, str) or hasattr(value, "__html__"):  # Markup: jinja2's escaped text
        return value
    return redact(value)


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("mcpspec.report.review", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        trim_blocks=False,
        keep_trailing_newline=True,
    )


def render_html(report: Review) -> str:
    """The page for ``report``."""
    picture = lay_out(report.shown, {card.name: card.anchor for card in report.servers}) if report.shown is not None else Picture(0, 0)
    return _environment().get_template("report.html.j2").render(r=report, p=picture)
