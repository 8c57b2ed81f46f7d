"""``mcpspec graph``: the trust graph as DOT, Mermaid, JSON or SVG.

``view_model`` lays the lint results over the graph; one module per format draws it
(``dot`` also runs Graphviz for SVG, ``mermaid``, ``json_graph``), and the
formats are looked up by name in :mod:`mcpspec.report.renderers`.
"""

from __future__ import annotations

from mcpspec.report.graph.dot import GraphvizFailed, GraphvizMissing
from mcpspec.report.graph.view_model import GraphView, involved_nodes, view
from mcpspec.report.renderers import GRAPH_FORMATS, graph_renderer

FORMATS = tuple(GRAPH_FORMATS)


def render(shown: GraphView, output_format: str) -> str:
    """The graph in one of FORMATS; UnknownFormat (a ValueError) for any other."""
    return graph_renderer(output_format)(shown)


__all__ = ["FORMATS", "GraphView", "GraphvizFailed", "GraphvizMissing", "involved_nodes", "render", "view"]
