"""The trust graph as Graphviz DOT, and as SVG through Graphviz's ``dot``.

Every name, path and egress entry is a DOT quoted string (quotes, backslashes
and newlines escaped, ``&`` written as an entity), so it shows literally and
cannot end the string.
"""

from __future__ import annotations

import shutil
import subprocess

from mcpspec.report.graph.view_model import ATTACK_COLOUR, EDGE_STYLE, Cluster, GraphView, clusters, node_lines

# DOT shape per node kind.
NODE_SHAPE = {
    "server": "box",
    "tool": "ellipse",
    "secret": "hexagon",
    "path": "folder",
    "destination": "cds",
    "agent": "doubleoctagon",
    "namespace": "box3d",
}


def dot_quote(text: str) -> str:
    """A DOT quoted string that shows ``text`` literally: no escape sequence, no way out of the quotes."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{escaped}"'


def dot_label(lines: list[str]) -> str:
    """A label shown literally, one line each: DOT-quoted, with ``&`` as ``&amp;`` because
    Graphviz reads character entities in every label (``&lt;`` would show as ``<``)."""
    return '"' + "\\n".join(dot_quote(line.replace("&", "&amp;"))[1:-1] for line in lines) + '"'


def _dot_attrs(attrs: dict[str, str | list[str]]) -> str:
    """Attributes; the text ones (label, tooltip; a list is one line each) shown literally."""
    parts: list[str] = []
    for key, value in attrs.items():
        if isinstance(value, list):
            parts.append(f"{key}={dot_label(value)}")
        else:
            parts.append(f"{key}={dot_label([value]) if key in ('label', 'tooltip') else dot_quote(value)}")
    return "[" + ", ".join(parts) + "]"


def render_dot(shown: GraphView) -> str:
    graph = shown.graph
    title = f"{graph.plan.project}: trust graph ({graph.plan.file})"
    out = [
        f"digraph {dot_quote('mcpspec')} {{",
        f"  graph [label={dot_label([title])}, labelloc=t, rankdir=LR, compound=true, fontname=\"Helvetica\", fontsize=12];",
        '  node [fontname="Helvetica", fontsize=10, style="filled", fillcolor="#ffffff", color="#343a40"];',
        '  edge [fontname="Helvetica", fontsize=9, color="#495057"];',
    ]

    def node_line(node_id: str, indent: str) -> str:
        node = graph.nodes[node_id]
        attrs: dict[str, str | list[str]] = {"shape": NODE_SHAPE.get(node.kind, "box"), "fillcolor": shown.fill(node_id)}
        if node.kind == "server":
            attrs["style"] = "filled,bold"
        worst = shown.worst(node_id)
        if worst is not None:
            codes = sorted({r.code for r in shown.findings[node_id]})
            attrs["tooltip"] = f"{worst}: {', '.join(codes)}"
        attrs["label"] = node_lines(shown, node)
        return f"{indent}{dot_quote(node_id)} {_dot_attrs(attrs)};"

    def emit(cluster: Cluster, depth: int) -> None:
        indent = "  " * depth
        if not cluster.key:
            out.extend(node_line(n, indent) for n in cluster.nodes)
            return
        out.append(f"{indent}subgraph {dot_quote(cluster.key)} {{")
        inner = indent + "  "
        out.append(f"{inner}graph {_dot_attrs({'label': cluster.label, **cluster.style})};")
        out.extend(node_line(n, inner) for n in cluster.nodes)
        for child in cluster.children:
            emit(child, depth + 1)
        out.append(f"{indent}}}")

    for cluster in clusters(shown):
        emit(cluster, 1)
    for edge in shown.edges:
        attrs: dict[str, str | list[str]] = dict(EDGE_STYLE.get(edge.kind, {}))
        codes = shown.attack.get(edge)
        if codes:
            attrs.update({"color": ATTACK_COLOUR, "penwidth": "3", "tooltip": f"attack path: {', '.join(codes)}"})
        out.append(f"  {dot_quote(edge.source)} -> {dot_quote(edge.target)} {_dot_attrs(attrs)};")
    out.append("}")
    return "\n".join(out) + "\n"


class GraphvizMissing(Exception):
    """Graphviz's ``dot`` is not on PATH."""


class GraphvizFailed(Exception):
    """``dot`` ran and failed."""


def render_svg(dot_text: str) -> str:
    """Run Graphviz's ``dot -Tsvg`` on DOT text."""
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizMissing(
            "--format svg needs Graphviz's 'dot', which is not installed; "
            "install it (Debian/Ubuntu: apt-get install graphviz) or use --format dot and render the file elsewhere"
        )
    done = subprocess.run([dot, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True, check=False)
    if done.returncode != 0:
        raise GraphvizFailed(f"dot -Tsvg failed (exit {done.returncode}): {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout.decode("utf-8")

