"""``mcpspec graph``: the trust graph as DOT, Mermaid, JSON or SVG.

Servers are grouped by where they run: each agent is a cluster holding the
agent (its model context) and its sandbox (the servers placed in it); each
dedicated server has a sandbox of its own; external servers run elsewhere.
Secrets, host paths and network destinations sit in their own groups. Edges
are styled by kind, nodes are coloured by the worst lint finding that
involves them, and the edges between the nodes of a graph-rule finding (an
attack path) are drawn thick and red.

Every name, path and egress entry is escaped for the output language: DOT
quoted strings (quotes, backslashes, newlines) and Mermaid, whose node and
subgraph ids are generated (``n0``, ``c0``) and whose labels are quoted with
every character outside a small safe set written as an entity code. The
output is sorted, so the same spec gives the same bytes.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mcpspec.analysis.graph import Edge, Node, TrustGraph, blast_radius, server_id
from mcpspec.diagnostics import SpecPath, format_path
from mcpspec.rules.engine import LEVELS, Result

FORMATS = ("dot", "mermaid", "json", "svg")
_path_text = functools.lru_cache(maxsize=1 << 17)(format_path)
JSON_FORMAT_VERSION = 1

# Fill colour per worst severity; nodes no finding involves stay white.
SEVERITY_FILL = {
    "error": "#e03131",
    "critical": "#ff6b6b",
    "high": "#ffa94d",
    "medium": "#ffe066",
    "low": "#a5d8ff",
    "info": "#e9ecef",
}
NO_FINDING_FILL = "#ffffff"
ATTACK_COLOUR = "#c00000"

# DOT attributes per edge kind.
EDGE_STYLE: dict[str, dict[str, str]] = {
    "mounts-rw": {"color": "#e03131", "style": "bold", "penwidth": "2", "label": "rw"},
    "mounts-ro": {"color": "#495057", "style": "dashed", "label": "ro"},
    "uses-secret": {"color": "#b8860b", "style": "solid", "arrowhead": "diamond", "label": "secret"},
    "egress-to": {"color": "#1c7ed6", "style": "solid", "label": "egress"},
    "member-of": {"color": "#7048e8", "style": "dotted", "arrowhead": "none"},
    "has-tool": {"color": "#adb5bd", "style": "solid", "arrowhead": "none"},
    "in-namespace": {"color": "#7048e8", "style": "dotted", "arrowhead": "odot"},
    "contains": {"color": "#868e96", "style": "dashed", "arrowhead": "empty", "label": "contains"},
}
NODE_SHAPE = {
    "server": "box",
    "tool": "ellipse",
    "secret": "hexagon",
    "path": "folder",
    "destination": "cds",
    "agent": "doubleoctagon",
    "namespace": "box3d",
}

# Spec places that name a node by being its own path (a prefix of a finding's path).
_NODE_KINDS_BY_PATH = ("server", "tool", "secret", "agent")
# Edges a spec place stands for: a finding at or under an edge's place involves the
# resource (or sandbox) it leads to, and an attack path runs along the edge itself.
_NAMED_EDGES = ("mounts-rw", "mounts-ro", "uses-secret", "egress-to", "in-namespace")
# Edges an attack path runs along when both their ends are on it.
_STRUCTURAL_EDGES = ("has-tool", "member-of", "contains")

@dataclass
class GraphView:
    """The graph with the lint results laid over it: what every renderer draws."""

    graph: TrustGraph
    results: list[Result]
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    findings: dict[str, list[Result]] = field(default_factory=dict)  # node id -> results involving it
    attack: dict[Edge, list[str]] = field(default_factory=dict)  # edge -> graph-rule codes whose path it is on

    def worst(self, node_id: str) -> str | None:
        found = self.findings.get(node_id)
        if not found:
            return None
        return min((r.severity for r in found), key=LEVELS.index)

    def fill(self, node_id: str) -> str:
        worst = self.worst(node_id)
        return SEVERITY_FILL[worst] if worst is not None else NO_FINDING_FILL


def view(graph: TrustGraph, results: Iterable[Result]) -> GraphView:
    """Lay the active (unsuppressed) results over the graph, in a stable order."""
    active = [r for r in results if r.suppression is None]
    shown = GraphView(graph, active)
    shown.nodes = sorted(graph.nodes.values(), key=lambda n: n.id)
    shown.edges = sorted(graph.edges, key=_edge_key)
    index = _PlaceIndex(graph)
    for result in active:
        places = [result.path, *(hop.path for hop in result.related)]
        on_path: set[str] = set()
        for place in places:
            on_path |= index.involved(place)
        for node_id in on_path:
            shown.findings.setdefault(node_id, []).append(result)
        if result.code.startswith("GR"):
            for edge in _attack_edges(graph, index, places, on_path):
                codes = shown.attack.setdefault(edge, [])
                if result.code not in codes:
                    codes.append(result.code)
    for codes in shown.attack.values():
        codes.sort()
    return shown


def _attack_edges(graph: TrustGraph, index: _PlaceIndex, places: list[SpecPath], on_path: set[str]) -> Iterator[Edge]:
    """The edges of one graph finding's chain: the mounts, secrets, egress and sandboxes
    its places name, and the tool, agent and containment links between its nodes."""
    for place in places:
        yield from (edge for edge in index.named_edges(place) if edge.source in on_path)
    for node_id in sorted(on_path):
        yield from (edge for edge in graph.out_edges.get(node_id, ()) if edge.kind in _STRUCTURAL_EDGES and edge.target in on_path)


def _edge_key(edge: Edge) -> tuple[str, str, str, str]:
    return (edge.source, edge.target, edge.kind, _path_text(edge.path))


class _PlaceIndex:
    """Which nodes and edges a spec path involves, found by looking up each of its prefixes."""

    def __init__(self, graph: TrustGraph) -> None:
        self.nodes: dict[SpecPath, list[str]] = {}
        self.edges: dict[SpecPath, list[Edge]] = {}
        for node in graph.nodes.values():
            if node.kind in _NODE_KINDS_BY_PATH and node.path:
                self.nodes.setdefault(node.path, []).append(node.id)
        for edge in graph.edges:
            if edge.kind in _NAMED_EDGES and edge.path:
                self.edges.setdefault(edge.path, []).append(edge)

    def named_edges(self, path: SpecPath) -> Iterator[Edge]:
        for length in range(1, len(path) + 1):
            yield from self.edges.get(path[:length], ())

    def involved(self, path: SpecPath) -> set[str]:
        found: set[str] = set()
        for length in range(1, len(path) + 1):
            found.update(self.nodes.get(path[:length], ()))
        found.update(edge.target for edge in self.named_edges(path))
        return found


# --- where each node is drawn ---


@dataclass
class _Cluster:
    key: str  # stable DOT cluster name, without user text
    label: str
    style: dict[str, str]
    nodes: list[str] = field(default_factory=list)
    children: list[_Cluster] = field(default_factory=list)


def _clusters(shown: GraphView) -> list[_Cluster]:
    """Agents (with their sandboxes), dedicated sandboxes, external servers, then resources."""
    graph = shown.graph
    plan = graph.plan
    placed: set[str] = set()
    tools_of: dict[str, list[str]] = {}
    for edge in shown.edges:
        if edge.kind == "has-tool":
            tools_of.setdefault(edge.source, []).append(edge.target)

    def take(node_ids: Iterable[str]) -> list[str]:
        taken = [n for n in node_ids if n in graph.nodes and n not in placed]
        placed.update(taken)
        return taken

    def with_tools(server: str) -> list[str]:
        return take([server_id(server), *tools_of.get(server_id(server), [])])

    out: list[_Cluster] = []
    for number, agent in enumerate(sorted(plan.agents)):
        cluster = _Cluster(f"cluster_agent_{number}", f"agent: {agent} (one model context)", {"style": "rounded", "color": "#7048e8"})
        cluster.nodes = take([f"agent:{agent}"])
        sandbox_servers = sorted(s for s in plan.agents[agent] if plan.servers[s].placement == "agent")
        if sandbox_servers:
            sandbox = _Cluster(f"cluster_agent_{number}_sandbox", f"{agent} sandbox (placement: agent)", {"style": "dashed", "color": "#7048e8"})
            sandbox.nodes = take([f"ns:agent:{agent}"])
            for server in sandbox_servers:
                sandbox.nodes += with_tools(server)
            cluster.children.append(sandbox)
        out.append(cluster)
    homeless = sorted(name for name, s in plan.servers.items() if s.placement == "agent" and server_id(name) not in placed)
    if homeless:
        cluster = _Cluster("cluster_agent_none", "agent sandbox (no agent uses these servers)", {"style": "dashed", "color": "#7048e8"})
        for server in homeless:
            cluster.nodes += with_tools(server)
        out.append(cluster)
    dedicated = sorted(name for name, s in plan.servers.items() if s.placement == "dedicated")
    if dedicated:
        cluster = _Cluster("cluster_dedicated", "dedicated sandboxes", {"style": "rounded", "color": "#2b8a3e"})
        for number, server in enumerate(dedicated):
            own = _Cluster(f"cluster_dedicated_{number}", f"{server} sandbox", {"style": "rounded,dashed", "color": "#2b8a3e"})
            own.nodes = with_tools(server)
            cluster.children.append(own)
        out.append(cluster)
    external = sorted(name for name, s in plan.servers.items() if s.placement == "external")
    if external:
        cluster = _Cluster("cluster_external", "external (runs elsewhere; not sandboxed by mcpspec)", {"style": "rounded,dashed", "color": "#868e96"})
        for server in external:
            cluster.nodes += with_tools(server)
        out.append(cluster)
    for key, label, kind in (
        ("cluster_secrets", "secrets", "secret"),
        ("cluster_host", "host filesystem", "path"),
        ("cluster_network", "network", "destination"),
    ):
        members = take(n.id for n in shown.nodes if n.kind == kind)
        if members:
            out.append(_Cluster(key, label, {"style": "rounded", "color": "#ced4da"}, members))
    rest = take(n.id for n in shown.nodes)
    if rest:
        out.append(_Cluster("", "", {}, rest))
    return out


def _node_lines(shown: GraphView, node: Node) -> list[str]:
    """The text of a node: its name, then what it is, then its worst finding."""
    plan = shown.graph.plan
    lines = [node.label]
    if node.kind == "server":
        server = plan.servers[node.label]
        lines.append(f"{server.kind}, {server.trust}")
    elif node.kind == "tool":
        server_name, _, tool_name = node.id[len("tool:"):].partition("/")
        tool = plan.servers[server_name].tools[tool_name]
        lines[0] = tool_name
        if tool.effects:
            lines.append(", ".join(tool.effects))
    elif node.kind in ("secret", "path", "destination", "agent"):
        lines.append(node.kind if node.kind != "path" else "host path")
    found = shown.findings.get(node.id)
    if found:
        worst = shown.worst(node.id)
        lines.append(f"{worst}: {len(found)} finding{'s' if len(found) != 1 else ''}")
    return lines


# --- DOT ---


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
        attrs["label"] = _node_lines(shown, node)
        return f"{indent}{dot_quote(node_id)} {_dot_attrs(attrs)};"

    def emit(cluster: _Cluster, depth: int) -> None:
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

    for cluster in _clusters(shown):
        emit(cluster, 1)
    for edge in shown.edges:
        attrs: dict[str, str | list[str]] = dict(EDGE_STYLE.get(edge.kind, {}))
        codes = shown.attack.get(edge)
        if codes:
            attrs.update({"color": ATTACK_COLOUR, "penwidth": "3", "tooltip": f"attack path: {', '.join(codes)}"})
        out.append(f"  {dot_quote(edge.source)} -> {dot_quote(edge.target)} {_dot_attrs(attrs)};")
    out.append("}")
    return "\n".join(out) + "\n"


# --- Mermaid ---

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
        return f"{indent}{ids[node_id]}{opening}{_mermaid_label(_node_lines(shown, node))}{closing}"

    def emit(cluster: _Cluster, depth: int) -> None:
        indent = "  " * depth
        if not cluster.key:
            out.extend(node_line(n, indent) for n in cluster.nodes)
            return
        out.append(f'{indent}subgraph c{next(counter)}["{mermaid_text(cluster.label)}"]')
        out.extend(node_line(n, indent + "  ") for n in cluster.nodes)
        for child in cluster.children:
            emit(child, depth + 1)
        out.append(f"{indent}end")

    for cluster in _clusters(shown):
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


# --- JSON ---


def json_data(shown: GraphView) -> dict[str, Any]:
    """Nodes, edges (networkx node-link form), findings per node and the blast radius of every server."""
    return {
        **_json_head(shown),
        "nodes": list(_json_nodes(shown)),
        "edges": list(_json_edges(shown)),
        "blast_radius": dict(_json_blast_radii(shown)),
    }


def _json_head(shown: GraphView) -> dict[str, Any]:
    plan = shown.graph.plan
    return {"format_version": JSON_FORMAT_VERSION, "file": plan.file, "project": plan.project, "directed": True, "multigraph": True, "graph": {}}


def _json_nodes(shown: GraphView) -> Iterator[dict[str, Any]]:
    for node in shown.nodes:
        yield {
            "id": node.id,
            "kind": node.kind,
            "label": node.label,
            "path": _path_text(node.path),
            "worst": shown.worst(node.id),
            "findings": [_finding(r) for r in shown.findings.get(node.id, [])],
        }


def _json_edges(shown: GraphView) -> Iterator[dict[str, Any]]:
    for edge in shown.edges:
        yield {"source": edge.source, "target": edge.target, "kind": edge.kind, "path": _path_text(edge.path), "attack_paths": shown.attack.get(edge, [])}


def _json_blast_radii(shown: GraphView) -> Iterator[tuple[str, dict[str, Any]]]:
    for name in sorted(shown.graph.plan.servers):
        yield name, blast_radius(shown.graph, name)


def _finding(result: Result) -> dict[str, Any]:
    return {"code": result.code, "severity": result.severity, "path": _path_text(result.path), "line": result.span.line, "col": result.span.col, "message": result.message}


def render_json(shown: GraphView) -> str:
    """``json_data`` as one line of JSON, encoded item by item.

    Encoding each node, edge and blast radius as it is made keeps only its text,
    not every dict at once (at 10,000 servers that halves the peak memory), and
    without indentation json uses its fast encoder. Pipe it through jq to read.
    """
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    parts = [encode(_json_head(shown))[:-1]]
    parts.append(',"nodes":[' + ",".join(map(encode, _json_nodes(shown))) + "]")
    parts.append(',"edges":[' + ",".join(map(encode, _json_edges(shown))) + "]")
    parts.append(',"blast_radius":{' + ",".join(f"{encode(name)}:{encode(radius)}" for name, radius in _json_blast_radii(shown)) + "}}\n")
    return "".join(parts)


# --- SVG ---


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


def render(shown: GraphView, output_format: str) -> str:
    """The graph in one of FORMATS."""
    if output_format == "dot":
        return render_dot(shown)
    if output_format == "mermaid":
        return render_mermaid(shown)
    if output_format == "json":
        return render_json(shown)
    if output_format == "svg":
        return render_svg(render_dot(shown))
    raise ValueError(f"unknown graph format {output_format!r}; choose from {', '.join(FORMATS)}")


def involved_nodes(graph: TrustGraph, path: SpecPath) -> set[str]:
    """The nodes a finding at ``path`` involves (for API users; the renderers index once)."""
    return _PlaceIndex(graph).involved(path)
