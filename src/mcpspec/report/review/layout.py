"""The trust graph laid out in columns for the report's inline SVG (no Graphviz at report time).

Columns by node kind, left to right: agents (with the sandbox their servers share) and,
under them, network destinations; servers (their tools folded in: a server box names how
many it has); secrets and host paths. Every wire then joins neighbouring columns and
none crosses a box. Within a column, resources sit near the servers that use them (the
mean row of their servers), so most wires run straight across. Boxes are
filled by the worst finding that involves them and wires on an attack path (the graph
rules' findings) are drawn thick and red.

Only numbers and fixed colours are computed here; every text stays plain text for the
template to escape.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcpspec.analysis.graph import Node
from mcpspec.report.graph.view_model import ATTACK_COLOUR, EDGE_STYLE, SEVERITY_FILL, GraphView

COLUMN_WIDTH = 210
COLUMN_GAP = 110
LINE_HEIGHT = 14
ROW_GAP = 12
MARGIN = 20
HEADER = 28
LABEL_CHARS = 27
PATH_LINES = 3
# Beyond this many boxes a picture no longer fits a screen: the report says so instead.
MAX_BOXES = 400

COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("agents", ("agent", "namespace", "destination")),
    ("servers", ("server",)),
    ("secrets and host paths", ("secret", "path")),
)
# Network destinations sit under the agents, in the same column: every wire then runs
# between neighbouring columns and none crosses a box.
SECTION = {"destination": "network"}
KIND_STROKE = {
    "agent": "#7048e8",
    "namespace": "#7048e8",
    "server": "#212529",
    "secret": "#b8860b",
    "path": "#495057",
    "destination": "#1c7ed6",
}
KIND_RADIUS = {"agent": 12, "namespace": 2, "server": 4, "secret": 14, "path": 0, "destination": 18}
KIND_NAME = {
    "agent": "agent (one model context)",
    "namespace": "agent sandbox shared by its servers",
    "server": "MCP server (its tools folded in)",
    "secret": "secret",
    "path": "host path",
    "destination": "network destination",
}
EDGE_NAME = {
    "mounts-rw": "mounts read-write",
    "mounts-ro": "mounts read-only",
    "uses-secret": "holds the secret",
    "egress-to": "may connect to",
    "member-of": "used by the agent",
    "in-namespace": "runs in the agent's sandbox",
    "contains": "path contains path",
}


@dataclass(frozen=True)
class Box:
    id: str
    x: float
    y: float
    w: float
    h: float
    kind: str
    lines: tuple[str, ...]
    title: str  # the full text, shown as a tooltip
    heading: int  # how many of ``lines`` are the box's name (a host path may wrap over several)
    fill: str
    stroke: str
    radius: int
    attack: bool
    link: str  # '' or the anchor of the server's card


@dataclass(frozen=True)
class Wire:
    d: str
    colour: str
    width: float
    dash: str
    kind: str
    attack: bool
    title: str


@dataclass(frozen=True)
class LegendItem:
    label: str
    fill: str = "#ffffff"
    stroke: str = "#212529"
    radius: int = 0
    dash: str = ""
    width: float = 1.5


@dataclass
class Picture:
    width: float
    height: float
    columns: list[tuple[float, float, str]] = field(default_factory=list)  # headings: x, y, text
    boxes: list[Box] = field(default_factory=list)
    wires: list[Wire] = field(default_factory=list)
    node_legend: list[LegendItem] = field(default_factory=list)
    edge_legend: list[LegendItem] = field(default_factory=list)
    severity_legend: list[LegendItem] = field(default_factory=list)
    attack_count: int = 0
    omitted: str = ""  # why no picture is drawn


def _short(text: str, middle: bool = False) -> str:
    """At most LABEL_CHARS characters; a destination keeps its end, where names differ."""
    if len(text) <= LABEL_CHARS:
        return text
    if middle:
        head = 8
        return text[:head] + "…" + text[-(LABEL_CHARS - head - 1):]
    return text[: LABEL_CHARS - 1] + "…"


def path_lines(path: str) -> list[str]:
    """A host path over at most PATH_LINES lines of LABEL_CHARS, broken only between segments
    (``/srv/data`` | ``/exports``). When it needs more, whole segments after the first give way
    to one ``/…``, the last ones kept; a single segment longer than a line wraps over several,
    never shortened. No line ever holds part of a name with the rest cut off."""
    segments = ["/" + part for part in path.strip("/").split("/")] if path.startswith("/") else _relative_segments(path)
    lines = _wrap(segments)
    dropped = 1
    while len(lines) > PATH_LINES and dropped < len(segments) - 1:
        lines = _wrap([segments[0], "/…", *segments[1 + dropped :]])
        dropped += 1
    return lines


def _relative_segments(path: str) -> list[str]:
    first, *rest = path.split("/")
    return [first, *("/" + part for part in rest)]


def _wrap(segments: list[str]) -> list[str]:
    lines: list[str] = []
    for segment in segments:
        while len(segment) > LABEL_CHARS:  # one name longer than a line: wrapped, never cut
            lines.append(segment[:LABEL_CHARS])
            segment = segment[LABEL_CHARS:]
        if lines and len(lines[-1]) + len(segment) <= LABEL_CHARS:
            lines[-1] += segment
        else:
            lines.append(segment)
    return lines


def _display(node: Node, lines: list[str]) -> list[str]:
    """The lines a box shows: a host path wrapped between its segments, every other line shortened."""
    out: list[str] = []
    for number, line in enumerate(lines):
        if number == 0 and node.kind == "path":
            out.extend(path_lines(line))
        else:
            out.append(_short(line, middle=number == 0 and node.kind == "destination"))
    return out


def lay_out(shown: GraphView, server_anchor: dict[str, str]) -> Picture:
    """Place every node but tools; fold tools (and their attack marks) into their servers."""
    graph = shown.graph
    column_of = {kind: index for index, (_, kinds) in enumerate(COLUMNS) for kind in kinds}
    visible = [n for n in shown.nodes if n.kind in column_of]
    if len(visible) > MAX_BOXES:
        picture = Picture(0, 0)
        picture.omitted = f"The graph has {len(visible)} nodes, too many to draw legibly here: `mcpspec graph -f svg` draws it whole."
        return picture
    attack_nodes: set[str] = set()
    tool_owner = {e.target: e.source for e in graph.edges if e.kind == "has-tool"}
    for edge in shown.attack:
        for end in (edge.source, edge.target):
            attack_nodes.add(tool_owner.get(end, end))
    columns: list[list[Node]] = [[] for _ in COLUMNS]
    for node in visible:
        columns[column_of[node.kind]].append(node)
    _order(shown, columns)
    tallest = 0.0
    heights: list[list[float]] = []
    for members in columns:
        sizes = [_lines_height(len(_display(node, _lines(shown, node)))) for node in members]
        heights.append(sizes)
        tallest = max(tallest, _used(members, sizes))
    picture = Picture(width=MARGIN * 2 + len(COLUMNS) * COLUMN_WIDTH + (len(COLUMNS) - 1) * COLUMN_GAP, height=MARGIN * 2 + HEADER + tallest)
    where: dict[str, Box] = {}
    for index, (members, sizes) in enumerate(zip(columns, heights, strict=True)):
        x = MARGIN + index * (COLUMN_WIDTH + COLUMN_GAP)
        picture.columns.append((x + COLUMN_WIDTH / 2, 22.0, COLUMNS[index][0] if any(n.kind not in SECTION for n in members) or not members else ""))
        y = MARGIN + HEADER + (tallest - _used(members, sizes)) / 2
        previous = ""
        for node, height in zip(members, sizes, strict=True):
            section = SECTION.get(node.kind, "")
            if section and section != previous:
                if not picture.columns[-1][2]:
                    picture.columns[-1] = (x + COLUMN_WIDTH / 2, 22.0, section)
                else:
                    y += HEADER
                    picture.columns.append((x + COLUMN_WIDTH / 2, y - 8, section))
            previous = section
            lines = _lines(shown, node)
            shown_lines = _display(node, lines)
            box = Box(
                id=node.id,
                x=x,
                y=y,
                w=COLUMN_WIDTH,
                h=height,
                kind=node.kind,
                lines=tuple(shown_lines),
                heading=len(shown_lines) - len(lines) + 1,
                title=" — ".join(lines),
                fill=shown.fill(node.id),
                stroke=ATTACK_COLOUR if node.id in attack_nodes else KIND_STROKE[node.kind],
                radius=KIND_RADIUS[node.kind],
                attack=node.id in attack_nodes,
                link=server_anchor.get(node.label, "") if node.kind == "server" else "",
            )
            picture.boxes.append(box)
            where[node.id] = box
            y += height + ROW_GAP
    for edge in shown.edges:
        if edge.source not in where or edge.target not in where:
            continue
        attack = edge in shown.attack
        style = EDGE_STYLE.get(edge.kind, {})
        colour = ATTACK_COLOUR if attack else style.get("color", "#495057")
        width = 3.5 if attack else (2.0 if edge.kind == "mounts-rw" else 1.2)
        dash = "" if attack else _dash(style.get("style", "solid"))
        label = f"{where[edge.source].title.split(' — ')[0]} {EDGE_NAME.get(edge.kind, edge.kind)} {where[edge.target].title.split(' — ')[0]}"
        if attack:
            label += " (attack path: " + ", ".join(shown.attack[edge]) + ")"
        picture.wires.append(Wire(_curve(where[edge.source], where[edge.target]), colour, width, dash, edge.kind, attack, label))
    picture.wires.sort(key=lambda wire: wire.attack)  # attack paths drawn last, on top
    picture.attack_count = sum(1 for wire in picture.wires if wire.attack)
    shown_kinds = {box.kind for box in picture.boxes}
    picture.node_legend = [
        LegendItem(KIND_NAME[kind], "#ffffff", KIND_STROKE[kind], KIND_RADIUS[kind]) for kind in KIND_NAME if kind in shown_kinds
    ]
    shown_edges = {wire.kind for wire in picture.wires}
    picture.edge_legend = [
        LegendItem(EDGE_NAME[kind], stroke=EDGE_STYLE[kind]["color"], dash=_dash(EDGE_STYLE[kind].get("style", "solid")), width=2.0 if kind == "mounts-rw" else 1.2)
        for kind in EDGE_NAME
        if kind in shown_edges
    ]
    picture.edge_legend.append(LegendItem("attack path of a graph finding", stroke=ATTACK_COLOUR, width=3.5))
    picture.severity_legend = [LegendItem(f"worst finding: {level}", fill=colour) for level, colour in SEVERITY_FILL.items() if level != "error"]
    picture.severity_legend.append(LegendItem("no finding", fill="#ffffff"))
    return picture


def _lines(shown: GraphView, node: Node) -> list[str]:
    plan = shown.graph.plan
    if node.kind == "server":
        server = plan.servers[node.label]
        lines = [node.label, f"{server.kind}, {server.trust}, {server.placement}", f"{len(server.tools)} tool{'' if len(server.tools) == 1 else 's'}"]
    elif node.kind == "namespace":
        lines = [node.label, "shared sandbox"]
    else:
        lines = [node.label, "host path" if node.kind == "path" else node.kind]
    worst = shown.worst(node.id)
    if worst is not None:
        count = len(shown.findings[node.id])
        lines.append(f"{worst}: {count} finding{'s' if count != 1 else ''}")
    return lines


def _used(members: list[Node], sizes: list[float]) -> float:
    """The height a column's boxes take, with a heading before each section after the first."""
    sections = {SECTION[n.kind] for n in members if n.kind in SECTION}
    leading = bool(members) and members[0].kind in SECTION
    return sum(sizes) + ROW_GAP * max(0, len(sizes) - 1) + HEADER * (len(sections) - (1 if leading else 0))


def _lines_height(count: int) -> float:
    return count * LINE_HEIGHT + 10


def _order(shown: GraphView, columns: list[list[Node]]) -> None:
    """Agents by name, each followed by its sandbox; servers by their first agent; resources and
    destinations by the mean row of the servers that reach them (ties by name)."""
    plan = shown.graph.plan
    agents = sorted((n for n in columns[0] if n.kind == "agent"), key=lambda n: n.label)
    spaces = {n.id: n for n in columns[0] if n.kind == "namespace"}
    destinations = [n for n in columns[0] if n.kind == "destination"]
    ordered: list[Node] = []
    for agent in agents:
        ordered.append(agent)
        space = spaces.pop(f"ns:agent:{agent.label}", None)
        if space is not None:
            ordered.append(space)
    ordered.extend(sorted(spaces.values(), key=lambda n: n.id))
    agent_row = {n.label: index for index, n in enumerate(agents)}
    columns[1].sort(key=lambda n: (min((agent_row.get(a, len(agent_row)) for a in plan.servers[n.label].agents), default=len(agent_row)), n.label))
    server_row = {n.id: index for index, n in enumerate(columns[1])}
    users: dict[str, list[int]] = {}
    for edge in shown.edges:
        if edge.source in server_row:
            users.setdefault(edge.target, []).append(server_row[edge.source])
    destinations.sort(key=lambda n: (_mean(users.get(n.id)), n.label))
    columns[0] = ordered + destinations
    columns[2].sort(key=lambda n: (n.kind != "secret", _mean(users.get(n.id)), n.label))


def _mean(rows: list[int] | None) -> float:
    return sum(rows) / len(rows) if rows else float("inf")


def _dash(style: str) -> str:
    return {"dashed": "6 4", "dotted": "2 3"}.get(style, "")


def _curve(source: Box, target: Box) -> str:
    """A cubic from the facing sides of two boxes; an arc on the right between boxes of one column."""
    sy = source.y + source.h / 2
    ty = target.y + target.h / 2
    if abs(source.x - target.x) < 1:
        x = source.x + source.w
        bulge = 30 + min(60.0, abs(ty - sy) / 6)
        return f"M{x:.1f},{sy:.1f} C{x + bulge:.1f},{sy:.1f} {x + bulge:.1f},{ty:.1f} {x:.1f},{ty:.1f}"
    if source.x < target.x:
        x1, x2 = source.x + source.w, target.x
    else:
        x1, x2 = source.x, target.x + target.w
    middle = (x1 + x2) / 2
    return f"M{x1:.1f},{sy:.1f} C{middle:.1f},{sy:.1f} {middle:.1f},{ty:.1f} {x2:.1f},{ty:.1f}"
