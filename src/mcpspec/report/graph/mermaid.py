"""The trust graph as a Mermaid flowchart.

Node and subgraph ids are generated (``n0``, ``c0``), never user text, and labels
are quoted with every character outside a small safe set written as an entity
code, so a name can neither end its label nor be read as markup.
"""

from __future__ import annotations

import itertools
import re

from mcpspec.report.graph.view_model import ATTACK_COLOUR, EDGE_STYLE, SEVERITY_FILL, Cluster, GraphView, clusters, node_lines
from mcpspec.rules.engine import LEVELS

_MERMAID_SAFE = re.compile(r"[A-Za-z0-9 _.,:/~*@+=!?'-]")

# Mermaid node shapes per kind: (open, close), around a quoted label.
_MERMAID_SHAPE = {
    "server": ("[", "]"),
    "tool": ("([", "])"),
    "secret": ("{{", "}}"),
    "path": ("[/", "/]"),
    "destination": ("((", "))"),
    "agent": ("[[", "]]"),
    "namespace": ("[(", ")]"),
}
_MERMAID_ARROW = {
    "mounts-rw": '==>|"rw"|',
    "mounts-ro": '-.->|"ro"|',
    "uses-secret": '-->|"secret"|',
    "egress-to": '-->|"egress"|',
    "member-of": "-.-",
    "has-tool": "---",
    "in-namespace": "-.-",
    "contains": '-.->|"contains"|',
}


def mermaid_text(text: str) -> str:
    """Label text for inside Mermaid double quotes: every character outside a safe set as ``#code;``.

    Quotes, ``#``, ``;``, ``<``, ``>``, ``&``, ``|``, backticks, backslashes and
    newlines can then neither end the label nor be read as markup.
    """
    return "".join(ch if _MERMAID_SAFE.match(ch) else f"#{ord(ch)};" for ch in text)


def _mermaid_label(lines: list[str]) -> str:
    return '"' + "<br/>".join(mermaid_text(line) for line in lines) + '"'


def render_mermaid(shown: GraphView) -> str:
    graph = shown.graph
    ids = {node.id: f"n{number}" for number, node in enumerate(shown.nodes)}
    out = ["flowchart LR", f"  %% {mermaid_text(graph.plan.project)}: trust graph; ids are generated, labels are the names"]
    counter = itertools.count()

    def node_line(node_id: str, indent: str) -> str:
        node = graph.nodes[node_id]
        opening, closing = _MERMAID_SHAPE.get(node.kind, ("[", "]"))
        return f"{indent}{ids[node_id]}{opening}{_mermaid_label(node_lines(shown, node))}{closing}"

    def emit(cluster: Cluster, depth: int) -> None:
        indent = "  " * depth
        if not cluster.key:
            out.extend(node_line(n, indent) for n in cluster.nodes)
            return
        out.append(f'{indent}subgraph c{next(counter)}["{mermaid_text(cluster.label)}"]')
        out.extend(node_line(n, indent + "  ") for n in cluster.nodes)
        for child in cluster.children:
            emit(child, depth + 1)
        out.append(f"{indent}end")

    for cluster in clusters(shown):
        emit(cluster, 1)
    link_styles: dict[str, list[int]] = {}
    for number, edge in enumerate(shown.edges):
        out.append(f"  {ids[edge.source]} {_MERMAID_ARROW.get(edge.kind, '-->')} {ids[edge.target]}")
        style = EDGE_STYLE.get(edge.kind, {})
        css = f"stroke:{style.get('color', '#495057')}"
        if edge.kind == "mounts-rw":
            css += ",stroke-width:2px"
        if edge in shown.attack:
            css = f"stroke:{ATTACK_COLOUR},stroke-width:4px"
        link_styles.setdefault(css, []).append(number)
    for css, numbers in sorted(link_styles.items()):
        out.append(f"  linkStyle {','.join(map(str, numbers))} {css}")
    for level in LEVELS:
        out.append(f"  classDef sev-{level} fill:{SEVERITY_FILL[level]},stroke:#343a40,color:#000")
    for node in shown.nodes:
        worst = shown.worst(node.id)
        if worst is not None:
            out.append(f"  class {ids[node.id]} sev-{worst}")
    return "\n".join(out) + "\n"
