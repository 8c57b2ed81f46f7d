"""Every output format by name: what `mcpspec lint`, `graph`, `plan` and `report --format` look up.

A format is one entry here; the modules behind them are imported on first use,
so a run pays only for the formats it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from mcpspec.report.graph.view_model import GraphView
    from mcpspec.report.model import LintReport
    from mcpspec.report.review.data import Review

# A lint renderer takes the report and whether the terminal shows colour.
LintRenderer = Callable[["LintReport", bool], str]
GraphRenderer = Callable[["GraphView"], str]
# A plan renderer takes the data of mcpspec.report.plan_output.plan_data.
PlanRenderer = Callable[[dict[str, Any]], str]
# A report renderer takes the reviewer's report of mcpspec.report.review.data.review.
ReportRenderer = Callable[["Review"], str]
_R = TypeVar("_R")


class UnknownFormat(ValueError):
    """No renderer has that name: a usage error."""


def _text(report: LintReport, colour: bool) -> str:
    from mcpspec.report import text

    return text.render(report, colour=colour)


def _json(report: LintReport, colour: bool) -> str:
    from mcpspec.report import json_output

    return json_output.render(report)


def _sarif(report: LintReport, colour: bool) -> str:
    from mcpspec.report import sarif

    return sarif.render(report)


def _github(report: LintReport, colour: bool) -> str:
    from mcpspec.report import github

    return github.render(report)


def _junit(report: LintReport, colour: bool) -> str:
    from mcpspec.report import junit

    return junit.render(report)


def _dot(shown: GraphView) -> str:
    from mcpspec.report.graph import dot

    return dot.render_dot(shown)


def _mermaid(shown: GraphView) -> str:
    from mcpspec.report.graph import mermaid

    return mermaid.render_mermaid(shown)


def _graph_json(shown: GraphView) -> str:
    from mcpspec.report.graph import json_graph

    return json_graph.render_json(shown)


def _svg(shown: GraphView) -> str:
    from mcpspec.report.graph import dot

    return dot.render_svg(dot.render_dot(shown))


LINT_FORMATS: Mapping[str, LintRenderer] = {"text": _text, "json": _json, "sarif": _sarif, "github": _github, "junit": _junit}
GRAPH_FORMATS: Mapping[str, GraphRenderer] = {"dot": _dot, "mermaid": _mermaid, "json": _graph_json, "svg": _svg}


def _plan_json(data: dict[str, Any]) -> str:
    from mcpspec.report import plan_output

    return plan_output.render_json(data)


def _plan_yaml(data: dict[str, Any]) -> str:
    from mcpspec.report import plan_output

    return plan_output.render_yaml(data)


PLAN_FORMATS: Mapping[str, PlanRenderer] = {"json": _plan_json, "yaml": _plan_yaml}


def _report_html(found: Review) -> str:
    from mcpspec.report.review.html import render_html

    return render_html(found)


def _report_markdown(found: Review) -> str:
    from mcpspec.report.review.markdown import render_markdown

    return render_markdown(found)


REPORT_FORMATS: Mapping[str, ReportRenderer] = {"html": _report_html, "markdown": _report_markdown}


def _lookup(table: Mapping[str, _R], name: str) -> _R:
    try:
        return table[name]
    except KeyError:
        raise UnknownFormat(f"unknown format {name!r}; choose from {', '.join(table)}") from None


def lint_renderer(name: str, docs_url: str | None = None) -> LintRenderer:
    """The lint format called ``name``; UnknownFormat names the choices. ``docs_url`` (default:
    the project's) is where the formats that link rule pages (SARIF's helpUri) find them."""
    render = _lookup(LINT_FORMATS, name)
    if name != "sarif" or docs_url is None:
        return render
    url = docs_url

    def _sarif_at(report: LintReport, colour: bool) -> str:
        from mcpspec.report import sarif

        return sarif.render(report, url)

    return _sarif_at


def graph_renderer(name: str) -> GraphRenderer:
    """The graph format called ``name``; UnknownFormat names the choices."""
    return _lookup(GRAPH_FORMATS, name)


def plan_renderer(name: str) -> PlanRenderer:
    """The plan format called ``name``; UnknownFormat names the choices."""
    return _lookup(PLAN_FORMATS, name)


def report_renderer(name: str) -> ReportRenderer:
    """The `mcpspec report` format called ``name``; UnknownFormat names the choices."""
    return _lookup(REPORT_FORMATS, name)
