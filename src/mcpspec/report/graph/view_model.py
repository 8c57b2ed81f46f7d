"""The view every ``mcpspec graph`` format draws: the trust graph with the lint results laid over it.

Nodes are coloured by the worst lint finding that involves them, and the edges
between the nodes of a graph-rule finding (an attack path) are marked. Servers
are grouped by where they run: each agent is a cluster holding the agent (its
model context) and its sandbox (the servers placed in it); each dedicated server
has a sandbox of its own; external servers run elsewhere. Secrets, host paths
and network destinations sit in their own groups. Everything is sorted, so the
same spec gives the same bytes in every format.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from mcpspec.analysis.graph import Edge, Node, TrustGraph, server_id
from mcpspec.diagnostics import SpecPath, format_path
from mcpspec.rules.engine import LEVELS, Result

path_text = functools.lru_cache(maxsize=1 << 17)(format_path)

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

# Edge styles per kind: DOT attributes (Mermaid takes their colours).
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
    return (edge.source, edge.target, edge.kind, path_text(edge.path))


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
class Cluster:
    key: str  # stable DOT cluster name, without user text
    label: str
    style: dict[str, str]
    nodes: list[str] = field(default_factory=list)
    children: list[Cluster] = field(default_factory=list)


def clusters(shown: GraphView) -> list[Cluster]:
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

    out: list[Cluster] = []
    for number, agent in enumerate(sorted(plan.agents)):
        cluster = Cluster(f"cluster_agent_{number}", f"agent: {agent} (one model context)", {"style": "rounded", "color": "#7048e8"})
        cluster.nodes = take([f"agent:{agent}"])
        sandbox_servers = sorted(s for s in plan.agents[agent] if plan.servers[s].placement == "agent")
        if sandbox_servers:
            sandbox = Cluster(f"cluster_agent_{number}_sandbox", f"{agent} sandbox (placement: agent)", {"style": "dashed", "color": "#7048e8"})
            sandbox.nodes = take([f"ns:agent:{agent}"])
            for server in sandbox_servers:
                sandbox.nodes += with_tools(server)
            cluster.children.append(sandbox)
        out.append(cluster)
    homeless = sorted(name for name, s in plan.servers.items() if s.placement == "agent" and server_id(name) not in placed)
    if homeless:
        cluster = Cluster("cluster_agent_none", "agent sandbox (no agent uses these servers)", {"style": "dashed", "color": "#7048e8"})
        for server in homeless:
            cluster.nodes += with_tools(server)
        out.append(cluster)
    dedicated = sorted(name for name, s in plan.servers.items() if s.placement == "dedicated")
    if dedicated:
        cluster = Cluster("cluster_dedicated", "dedicated sandboxes", {"style": "rounded", "color": "#2b8a3e"})
        for number, server in enumerate(dedicated):
            own = Cluster(f"cluster_dedicated_{number}", f"{server} sandbox", {"style": "rounded,dashed", "color": "#2b8a3e"})
            own.nodes = with_tools(server)
            cluster.children.append(own)
        out.append(cluster)
    external = sorted(name for name, s in plan.servers.items() if s.placement == "external")
    if external:
        cluster = Cluster("cluster_external", "external (runs elsewhere; not sandboxed by mcpspec)", {"style": "rounded,dashed", "color": "#868e96"})
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
            out.append(Cluster(key, label, {"style": "rounded", "color": "#ced4da"}, members))
    rest = take(n.id for n in shown.nodes)
    if rest:
        out.append(Cluster("", "", {}, rest))
    return out


def node_lines(shown: GraphView, node: Node) -> list[str]:
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


def involved_nodes(graph: TrustGraph, path: SpecPath) -> set[str]:
    """The nodes a finding at ``path`` involves (for API users; the renderers index once)."""
    return _PlaceIndex(graph).involved(path)
