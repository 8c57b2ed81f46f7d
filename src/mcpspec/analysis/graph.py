"""The trust graph: what the servers of a Plan share, and where data can flow.

Nodes are servers, their tools, secrets, host paths, network destinations
(``internet`` stands for every address an open egress policy reaches),
agents (one model context each) and the shared runtime namespace of the
servers an agent runs inside its own sandbox. Edges are mounts (ro/rw),
uses-secret, egress-to, member-of, has-tool, in-namespace and path
containment. Every node and edge keeps the spec path that created it.

The graph answers questions and returns data; the graph rules
(mcpspec.rules.graph) turn answers into findings. Shared resources are found
through indexes (a secret's servers, a path trie for containment), never by
comparing every pair of servers, so building and querying stay near linear.
``build`` makes only those indexes; the questions the rules ask need nothing
else. The nodes and edges themselves (``nodes``, ``edges``, ``out_edges``,
``in_edges``: what the renderers and ``blast_radius`` read) are made the first
time one is asked for, so a lint does not make an object per tool and
destination that nothing reads.

A server's tools say what it does, but its network says what it can do: a
server with open egress, or egress to a host anyone can write to (a paste
site, a webhook inbox, a wildcard over object storage: what NW004 knows),
can send data out whatever its tools declare. The graph records that as an
effect the server implies (``implied_effects``: ``external_send`` with the
hop that explains it), and the flow rules count it as a sink.
``to_networkx()`` gives the same graph as a networkx MultiDiGraph for API
users (networkx is the optional extra ``mcpspec[networkx]``); the rules and the
`mcpspec graph` renderers use the indexes directly, so the tool never imports it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import AGENT_TOKEN, EffectiveMount, EffectiveSandbox, Plan
from mcpspec.perf import gc_paused, quick_init
from mcpspec.rules import facts

if TYPE_CHECKING:
    import networkx

    from mcpspec.spec.values import Destination

INTERNET = "dest:internet"


@quick_init
@dataclass(frozen=True, slots=True)
class Node:
    id: str
    kind: str  # server | tool | secret | path | destination | agent | namespace
    label: str
    path: SpecPath


@quick_init
@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    kind: str  # mounts-ro | mounts-rw | uses-secret | egress-to | member-of | has-tool | in-namespace | contains
    path: SpecPath


@quick_init
@dataclass(frozen=True, slots=True)
class Hop:
    """One step of a flow: a node and the spec place that makes the step possible."""

    node: str
    path: SpecPath
    note: str


@quick_init
@dataclass(frozen=True, slots=True)
class MountRef:
    """A server's mount of one host path (workspace templates instantiated per agent)."""

    server: str
    source: str
    writable: bool
    path: SpecPath


@quick_init
@dataclass(frozen=True, slots=True)
class Implied:
    """An effect a server has whatever its tools declare: the hop that gives it, and where the spec says so."""

    effect: str
    hop: str  # "open egress", or "egress to a host anyone can write to"
    note: str
    path: SpecPath


OPEN_EGRESS = "open egress"
WRITABLE_EGRESS = "egress to a host anyone can write to"


@dataclass
class Elements:
    """The nodes and edges of a trust graph, with each node's edges out and in."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    out_edges: dict[str, list[Edge]] = field(default_factory=dict)
    in_edges: dict[str, list[Edge]] = field(default_factory=dict)

    def add_node(self, node_id: str, kind: str, label: str, path: SpecPath) -> str:
        if node_id not in self.nodes:
            self.nodes[node_id] = Node(node_id, kind, label, path)
        return node_id

    def add_edge(self, source: str, target: str, kind: str, path: SpecPath) -> None:
        edge = Edge(source, target, kind, path)
        self.edges.append(edge)
        self.out_edges.setdefault(source, []).append(edge)
        self.in_edges.setdefault(target, []).append(edge)


@dataclass
class TrustGraph:
    plan: Plan
    mounts_at: dict[str, list[MountRef]] = field(default_factory=dict)  # host path -> mounts of it
    mounts_by: dict[str, list[MountRef]] = field(default_factory=dict)  # server -> its mounts, in spec order
    parent_path: dict[str, str] = field(default_factory=dict)  # host path -> nearest mounted ancestor
    children: dict[str, list[str]] = field(default_factory=dict)  # host path -> nearest mounted descendants
    links: list[tuple[str, str]] = field(default_factory=list)  # (path, a nearest mounted descendant), as found
    implied: dict[str, tuple[Implied, ...]] = field(default_factory=dict)  # server -> effects its egress gives it
    sandboxes: dict[str, list[str]] = field(default_factory=dict)  # namespace node -> servers in it, one per edge
    sandboxes_of: dict[str, list[str]] = field(default_factory=dict)  # server -> namespace nodes it is in
    grants: dict[str, list[Edge]] = field(default_factory=dict)  # secret -> its uses-secret edges

    # --- nodes and edges, made on first use ---

    @cached_property
    def elements(self) -> Elements:
        with gc_paused():  # an object per node and edge: see mcpspec.perf
            return _elements(self)

    @property
    def nodes(self) -> dict[str, Node]:
        return self.elements.nodes

    @property
    def edges(self) -> list[Edge]:
        return self.elements.edges

    @property
    def out_edges(self) -> dict[str, list[Edge]]:
        return self.elements.out_edges

    @property
    def in_edges(self) -> dict[str, list[Edge]]:
        return self.elements.in_edges

    # --- questions ---

    def server(self, name: str) -> EffectiveSandbox:
        return self.plan.servers[name]

    def mounts_of(self, server: str) -> Sequence[MountRef]:
        return self.mounts_by.get(server, ())

    def overlapping(self, source: str) -> Iterator[MountRef]:
        """Mounts whose host path contains ``source``, equals it, or lies inside it."""
        yield from self.mounts_at.get(source, [])
        ancestor = self.parent_path.get(source)
        while ancestor is not None:
            yield from self.mounts_at.get(ancestor, [])
            ancestor = self.parent_path.get(ancestor)
        stack = list(self.children.get(source, ()))
        while stack:
            inner = stack.pop()
            yield from self.mounts_at.get(inner, [])
            stack.extend(self.children.get(inner, ()))

    def namespace_peers(self, server: str) -> list[str]:
        """Servers that run inside the same agent sandbox as ``server`` (placement: agent)."""
        peers: list[str] = []
        for namespace in self.sandboxes_of.get(server, ()):
            peers.extend(peer for peer in self.sandboxes[namespace] if peer != server)
        return list(dict.fromkeys(peers))

    def implied_effects(self, server: str) -> tuple[Implied, ...]:
        """Effects ``server`` has whatever its tools declare (``external_send`` through open egress)."""
        return self.implied.get(server, ())

    def secret_holders(self, secret: str) -> list[Edge]:
        return list(self.grants.get(secret, ()))

    def flows_from(self, start: str) -> Iterator[tuple[str, list[Hop]]]:
        """Every server data can reach from ``start``, with the shortest chain of hops.

        A hop is a shared writable path (one writes, the other mounts it) or a
        shared namespace (an agent sandbox both run in). Breadth first, so each
        server is reported once, with its shortest chain; each shared path and
        sandbox is expanded once per search, so the cost is what ``start``
        reaches, not its square.
        """
        seen = {start}
        expanded: set[str] = set()
        queue: deque[tuple[str, list[Hop]]] = deque([(start, [])])
        while queue:
            current, chain = queue.popleft()
            for target, hops in _steps_once(self, current, expanded):
                if target in seen:
                    continue
                seen.add(target)
                longer = chain + hops
                yield target, longer
                queue.append((target, longer))

    def to_networkx(self) -> networkx.MultiDiGraph[str]:
        try:
            import networkx
        except ImportError:
            raise ImportError("to_networkx() needs networkx: pip install 'mcpspec[networkx]'") from None

        graph: networkx.MultiDiGraph[str] = networkx.MultiDiGraph()
        for node in self.nodes.values():
            graph.add_node(node.id, kind=node.kind, label=node.label, path=node.path)
        for edge in self.edges:
            graph.add_edge(edge.source, edge.target, kind=edge.kind, path=edge.path)
        return graph


def server_id(name: str) -> str:
    return f"server:{name}"


def secret_id(name: str) -> str:
    return f"secret:{name}"


def path_id(source: str) -> str:
    return f"path:{source}"


def agent_id(name: str) -> str:
    return f"agent:{name}"


def namespace_id(agent: str) -> str:
    return f"ns:agent:{agent}"


def build(plan: Plan) -> TrustGraph:
    """The trust graph of a Plan: the indexes its questions use (nodes and edges come on first use)."""
    from mcpspec.rules.network.exfiltration_friendly_allowlist import problem  # NW004's hosts (imported on use: it imports the network rules)

    graph = TrustGraph(plan)
    for name, agent_servers in plan.agents.items():
        for server_name in agent_servers:
            if plan.servers[server_name].placement == "agent":
                graph.sandboxes.setdefault(namespace_id(name), []).append(server_name)
                graph.sandboxes_of.setdefault(server_name, []).append(namespace_id(name))
    for server in plan.servers.values():
        _index_server(graph, server, problem)
    _link_paths(graph)
    return graph


def _index_server(graph: TrustGraph, server: EffectiveSandbox, problem: Callable[[Destination], str]) -> None:
    """The server's secrets, mounts and implied effects, in the graph's indexes."""
    for grant in server.secrets:
        edge = Edge(server_id(server.name), secret_id(grant.name), "uses-secret", grant.path)
        graph.grants.setdefault(grant.name, []).append(edge)
    if not server.runs_here:
        return
    refs: list[MountRef] = []
    graph.mounts_by[server.name] = refs
    for mount in server.mounts:
        for source in _instances(mount, server):
            ref = MountRef(server.name, source, mount.writable, mount.path)
            refs.append(ref)
            graph.mounts_at.setdefault(source, []).append(ref)
    send = _implied_send(server, problem)
    if send is not None:
        graph.implied[server.name] = (send,)


def _elements(graph: TrustGraph) -> Elements:
    """Every node and edge of the graph, in the order a build adds them."""
    plan = graph.plan
    out = Elements()
    for name, agent_servers in plan.agents.items():
        out.add_node(agent_id(name), "agent", name, ("agents", name))
        namespace = None
        for server_name in agent_servers:
            server = plan.servers[server_name]
            out.add_edge(server_id(server_name), agent_id(name), "member-of", ("agents", name, "servers"))
            if server.placement == "agent":
                namespace = namespace or out.add_node(namespace_id(name), "namespace", f"{name} sandbox", ("agents", name))
                out.add_edge(server_id(server_name), namespace, "in-namespace", (*server.path, "placement"))
    for server in plan.servers.values():
        _add_server(out, server)
    for outer, inner in graph.links:
        out.add_edge(path_id(outer), path_id(inner), "contains", out.nodes[path_id(inner)].path)
    return out


def _add_server(out: Elements, server: EffectiveSandbox) -> None:
    node = out.add_node(server_id(server.name), "server", server.name, server.path)
    for tool_name in server.tools:
        where = (*server.path, "tools", tool_name)
        tool = out.add_node(f"tool:{server.name}/{tool_name}", "tool", f"{server.name}.{tool_name}", where)
        out.add_edge(node, tool, "has-tool", where)
    for grant in server.secrets:
        secret = out.add_node(secret_id(grant.name), "secret", grant.name, grant.secret_path)
        out.add_edge(node, secret, "uses-secret", grant.path)
    if not server.runs_here:
        return
    for mount in server.mounts:
        for source in _instances(mount, server):
            target = out.add_node(path_id(source), "path", source, mount.path)
            out.add_edge(node, target, "mounts-rw" if mount.writable else "mounts-ro", mount.path)
    if facts.egress_open(server):
        out.add_node(INTERNET, "destination", "the internet", ())
        out.add_edge(node, INTERNET, "egress-to", server.origin("egress.default"))
    base = server.origin("egress.allow")
    for index, entries in server.egress.written("allow"):
        # A preset (@private) is one destination, as the spec writes it.
        text = f"@{entries[0].preset}" if entries[0].preset is not None else entries[0].text
        where = (*base, index)
        dest = out.add_node(f"dest:{text}", "destination", text, where)
        out.add_edge(node, dest, "egress-to", where)


def _implied_send(server: EffectiveSandbox, problem: Callable[[Destination], str]) -> Implied | None:
    """``external_send`` when the server's egress reaches hosts an attacker can read: open, or a host anyone can write to (``problem`` says why)."""
    if facts.egress_open(server):
        return Implied("external_send", OPEN_EGRESS, f"{server.name}'s egress defaults to allow: it can send data anywhere", server.origin("egress.default"))
    for position, entry in enumerate(server.egress.allow):
        why = problem(entry)
        if why:
            path = facts.entry_path(server, "allow", position)
            return Implied("external_send", WRITABLE_EGRESS, f"{server.name} may connect to {entry.text}, {why}", path)
    return None


def _instances(mount: EffectiveMount, server: EffectiveSandbox) -> list[str]:
    """Host paths a mount stands for: a per-agent workspace dir is a different directory per agent."""
    if AGENT_TOKEN in mount.location and server.agents:
        return [mount.location.replace(AGENT_TOKEN, agent) for agent in server.agents]
    return [mount.location]


def _link_paths(graph: TrustGraph) -> None:
    """Link each mounted path to its nearest mounted descendants (the contains edges), through a trie."""
    trie: dict[str, Any] = {}
    terminal = object()
    for source in graph.mounts_at:
        level = trie
        for part in facts.components(source):
            level = level.setdefault(part, {})
        level[terminal] = source  # type: ignore[index]
    stack: list[tuple[dict[str, Any], str | None]] = [(trie, None)]
    while stack:
        level, ancestor = stack.pop()
        here = level.get(terminal)  # type: ignore[call-overload]
        if here is not None and here != ancestor:
            if ancestor is not None:
                _link(graph, ancestor, here)
            ancestor = here
        stack.extend((child, ancestor) for key, child in level.items() if key is not terminal)
    root_paths = [s for s in graph.mounts_at if s == "/"]
    for root in root_paths:  # "/" holds home paths too
        for source in graph.mounts_at:
            if source.startswith("~") and source not in graph.parent_path:
                _link(graph, root, source)


def _link(graph: TrustGraph, outer: str, inner: str) -> None:
    """``inner`` is a nearest mounted descendant of ``outer`` (a contains edge)."""
    graph.parent_path[inner] = outer
    graph.children.setdefault(outer, []).append(inner)
    graph.links.append((outer, inner))


def blast_radius(graph: TrustGraph, server: str) -> dict[str, Any]:
    """What a compromise of ``server`` reaches, each item with the spec place that grants it.

    ``secrets`` it holds, host ``paths`` it mounts (with their mode), network
    ``destinations`` it may connect to (``the internet`` for open egress), the
    ``agents`` whose model context reads its tool output, and the other
    ``servers`` data can reach from it through shared writable paths or a
    shared agent sandbox (``via`` lists every hop, in order: what ``flows_from``
    reports, found expanding each shared path once). Lists are sorted,
    so the same plan always gives the same dict. Raises KeyError for a server
    the plan does not have.
    """
    graph.server(server)
    out = graph.out_edges.get(server_id(server), [])
    secrets = sorted({(graph.nodes[e.target].label, _path_text(e.path)) for e in out if e.kind == "uses-secret"})
    paths = sorted({(e.target[len("path:"):], e.kind[len("mounts-"):], _path_text(e.path)) for e in out if e.kind.startswith("mounts-")})
    destinations = sorted({(graph.nodes[e.target].label, _path_text(e.path)) for e in out if e.kind == "egress-to"})
    agents = sorted({(e.target[len("agent:"):], _path_text(e.path)) for e in out if e.kind == "member-of"})
    reached = sorted(graph.flows_from(server), key=lambda item: item[0])
    return {
        "server": server,
        "path": _path_text(graph.nodes[server_id(server)].path),
        "secrets": [{"name": name, "path": path} for name, path in secrets],
        "paths": [{"host_path": source, "mode": mode, "path": path} for source, mode, path in paths],
        "destinations": [{"destination": label, "path": path} for label, path in destinations],
        "agents": [{"agent": name, "path": path} for name, path in agents],
        "servers": [
            {
                "server": name,
                "path": _path_text(hops[0].path) if hops else "",
                "via": [{"node": hop.node, "note": hop.note, "path": _path_text(hop.path)} for hop in hops],
            }
            for name, hops in reached
        ],
    }


def nearest_flow(
    graph: TrustGraph, start: str, wanted: Callable[[str], bool], dead: set[str], likely: ReaderIndex | None = None
) -> tuple[str, list[Hop]] | None:
    """The nearest server ``wanted`` accepts among those data from ``start`` reaches, with its chain.

    The same hops as ``flows_from``, breadth first (so a shortest chain), but each shared
    path and agent sandbox is expanded once per search, so a search costs what
    ``start`` can reach, not its square. ``dead`` holds servers known to reach
    nothing ``wanted`` accepts (for the same ``wanted``): they are not searched
    again. A search that finds nothing adds every server it saw to ``dead``,
    since all they reach, ``start`` reaches too. ``likely``, when given, indexes
    the readers of each path that ``wanted`` may accept: a path thousands of
    servers share is then checked without walking all of them on every search.
    """
    if start in dead:
        return None
    seen = {start}
    expanded: set[str] = set()
    queue: deque[tuple[str, list[Hop]]] = deque([(start, [])])
    while queue:
        current, chain = queue.popleft()
        if likely is not None:
            hit = _likely_step(graph, current, likely, lambda name: name not in seen and name not in dead and wanted(name), expanded)
            if hit is not None:
                return hit[0], chain + hit[1]
        for target, hops in _steps_once(graph, current, expanded):
            if target in seen or target in dead:
                continue
            seen.add(target)
            longer = chain + hops
            if wanted(target):
                return target, longer
            queue.append((target, longer))
    dead.update(seen if not wanted(start) else seen - {start})
    return None


@dataclass
class ReaderIndex:
    """The mounts overlapping each host path whose servers ``keep`` accepts, each path worked out once."""

    graph: TrustGraph
    keep: Callable[[str], bool]
    at: dict[str, list[MountRef]] = field(default_factory=dict)

    def readers(self, source: str) -> list[MountRef]:
        found = self.at.get(source)
        if found is None:
            found = self.at[source] = [ref for ref in self.graph.overlapping(source) if self.keep(ref.server)]
        return found


def _likely_step(graph: TrustGraph, server: str, likely: ReaderIndex, accept: Callable[[str], bool], expanded: set[str]) -> tuple[str, list[Hop]] | None:
    """A server ``accept``s that one shared path written by ``server`` leads to, found through the index."""
    for mount in graph.mounts_of(server):
        if not mount.writable or mount.source in expanded:
            continue
        for other in likely.readers(mount.source):
            if other.server != server and accept(other.server):
                write = Hop(path_id(mount.source), mount.path, f"{server} writes {mount.source}")
                return other.server, [write, Hop(server_id(other.server), other.path, f"{other.server} reads {other.source}")]
    return None


def _steps_once(graph: TrustGraph, server: str, expanded: set[str]) -> Iterator[tuple[str, list[Hop]]]:
    """One step of ``TrustGraph.flows_from``, skipping the paths and namespaces in ``expanded`` (and adding the rest to it).

    A path or namespace an earlier server of the same search expanded gives
    nothing new: breadth first, everything it leads to was reached already by
    a chain at most as long.
    """
    for mount in graph.mounts_of(server):
        if not mount.writable or mount.source in expanded:
            continue
        expanded.add(mount.source)
        write = Hop(path_id(mount.source), mount.path, f"{server} writes {mount.source}")
        for other in graph.overlapping(mount.source):
            if other.server != server:
                yield other.server, [write, Hop(server_id(other.server), other.path, f"{other.server} reads {other.source}")]
    for namespace in graph.sandboxes_of.get(server, ()):
        if namespace in expanded:
            continue
        expanded.add(namespace)
        for peer in graph.sandboxes[namespace]:
            if peer != server:
                note = f"{peer} shares the agent sandbox (and its files and network) with {server}"
                yield peer, [Hop(server_id(peer), (*graph.server(peer).path, "placement"), note)]


_PATH_TEXTS: dict[SpecPath, str] = {}


def _path_text(path: SpecPath) -> str:
    """``format_path``, remembered: the blast radii of a plan name the same places many times."""
    text = _PATH_TEXTS.get(path)
    if text is None:
        from mcpspec.diagnostics import format_path

        if len(_PATH_TEXTS) >= 1 << 17:
            _PATH_TEXTS.clear()
        text = _PATH_TEXTS[path] = format_path(path)
    return text
