"""What the graph rules share: the graph of the plan, built once per plan, tool roles, and how they phrase chains."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from mcpspec.analysis.graph import Implied, MountRef, TrustGraph, build
from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.perf import gc_paused, quick_init
from mcpspec.rules import facts
from mcpspec.rules.base import Related
from mcpspec.spec.models import Tool

# How many places a finding about a shared resource relates; a message names fewer (grouping.SHOWN).
RELATED_LIMIT = 25


def graph_of(plan: Plan) -> TrustGraph:
    """The plan's trust graph; the graph rules of one lint share one build (kept with the plan, it goes when the plan goes)."""
    graph = plan.derived.get("trust_graph")
    if not isinstance(graph, TrustGraph):
        with gc_paused():  # the build allocates an object per mount and secret grant: see mcpspec.perf
            graph = plan.derived["trust_graph"] = build(plan)
    return graph


# --- tools of one agent ---


@quick_init
@dataclass(frozen=True, slots=True)
class AgentTool:
    server: EffectiveSandbox
    name: str
    tool: Tool

    @property
    def label(self) -> str:
        return f"{self.server.name}.{self.name}"

    @property
    def path(self) -> tuple[str | int, ...]:
        return (*self.server.path, "tools", self.name)


def agent_tools(plan: Plan, agent: str) -> Iterator[AgentTool]:
    """Every tool the agent's model context can call."""
    for server_name in plan.agents[agent]:
        server = plan.servers[server_name]
        for name, tool in server.tools.items():
            yield AgentTool(server, name, tool)


def tools_by_agent(plan: Plan) -> dict[str, tuple[AgentTool, ...]]:
    """Each agent's ``agent_tools``, made once per plan: the graph rules of one lint ask for them more than once."""
    tools = plan.derived.get("tools_by_agent")
    if not isinstance(tools, dict):
        tools = plan.derived["tools_by_agent"] = {agent: tuple(agent_tools(plan, agent)) for agent in plan.agents}
    return tools


def reads_untrusted(item: AgentTool) -> bool:
    return "reads_untrusted" in item.tool.effects


def reads_private(item: AgentTool) -> bool:
    return "reads_private" in item.tool.effects


SEND_EFFECTS = frozenset({"external_send", "exports_data"})


def sends_out(item: AgentTool) -> bool:
    return not SEND_EFFECTS.isdisjoint(item.tool.effects)


def implied_send(graph: TrustGraph, item: AgentTool) -> Implied | None:
    """Why a tool can send data out although it declares no sending effect (its server's egress), or None."""
    implied = graph.implied_effects(item.server.name)
    if not implied or sends_out(item):
        return None
    return next((i for i in implied if i.effect == "external_send"), None)


def ungated(plan: Plan, item: AgentTool) -> bool:
    return not facts.approval_gated(plan, item.tool)


# --- servers and what they hold ---


@quick_init
@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a server matters to a rule: a phrase for the chain, and the place that says so."""

    phrase: str
    related: Related


def sensitivity(server: EffectiveSandbox, credential_mounts: bool = True) -> Evidence | None:
    """Why data taken from the server would hurt: a secret it holds, private data it reads, or a credential path it mounts."""
    for grant in server.secrets:
        return Evidence(f"holds secret '{grant.name}'", Related(grant.path, f"secret '{grant.name}' is handed to {server.name} here"))
    for name in facts.tools_with(server, "reads_private"):
        return Evidence("reads private data", Related(facts.tool_path(server, name), f"{server.name}.{name} reads private data"))
    if server.kind == "data":
        return Evidence("reads private data", Related((*server.path, "kind"), f"{server.name} is a data server"))
    if credential_mounts and server.runs_here:
        for mount in facts.host_mounts(server):
            for pattern, inside in facts.overlapping(mount.location, facts.CREDENTIAL_PATHS):
                phrase = f"mounts {mount.location} (credentials)" if inside else f"mounts {mount.location}, which holds {pattern}"
                return Evidence(phrase, Related(mount.path, f"{server.name} mounts credentials ({pattern}) here"))
    return None


def open_egress(server: EffectiveSandbox) -> Evidence:
    return Evidence("sends anywhere (egress defaults to allow)", Related(server.origin("egress.default"), f"{server.name}'s egress defaults to allow"))


def mount_of(server: EffectiveSandbox, ref: MountRef) -> EffectiveMount:
    """The server's mount a graph mount reference stands for."""
    return next(mount for mount in server.mounts if mount.path == ref.path)


def chain(*steps: str) -> str:
    """``a -> b -> c``: the steps of a path through the graph, as a message shows them."""
    return " -> ".join(steps)


def related_hops(steps: list[tuple[SpecPath, str]]) -> tuple[Related, ...]:
    """A Related per step; a place two steps share is related once, with both notes."""
    notes: dict[SpecPath, list[str]] = {}
    for path, note in steps:
        texts = notes.get(path)
        if texts is None:
            notes[path] = [note]
        elif note not in texts:
            texts.append(note)
    return tuple([Related(path, texts[0] if len(texts) == 1 else "; ".join(texts)) for path, texts in notes.items()])


def related_places(steps: list[Related]) -> tuple[Related, ...]:
    """``related_hops`` of steps already made Related: kept as they are when no two share a place."""
    if len({step.path for step in steps}) == len(steps):
        return tuple(steps)
    return related_hops([(step.path, step.note) for step in steps])
