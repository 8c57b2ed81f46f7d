"""
## What it does
Follows data out of every sensitive server (one that holds secrets, reads
private data, or mounts a credential path) through what servers share: a
writable path another server mounts, or an agent sandbox two servers run in.
Reports the nearest server along that way that can send to a destination the
sensitive server itself cannot reach.

## Why is this risky
An egress allowlist on the server that holds the data is not the boundary if
the data can move, one hop or several, to a server with wider egress. A
prompt-injected or compromised database server writes the rows into a shared
output directory; the fetch server that mounts the same directory uploads them
to any host it may reach. Each server's policy looks tight; the path through
them does not. Break a hop: do not share the directory (or mount it read-only
for the writer), or give the sink no egress beyond the source's.

## Example
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    output: {mode: rw}
servers:
  db:
    kind: data
    command: [mcp-db]
    mounts:
      - {from: workspace.output, to: /workspace/output}
  fetch:
    command: [mcp-fetch]
    mounts:
      - {from: workspace.output, to: /workspace/output, mode: ro}
    egress:
      allow: ["*.readthedocs.io:443"]
```

## Use instead
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    output: {mode: rw}
    downloads: {mode: rw}
servers:
  db:
    kind: data
    command: [mcp-db]
    mounts:
      - {from: workspace.output, to: /workspace/output}
  fetch:
    command: [mcp-fetch]
    mounts:
      - {from: workspace.downloads, to: /workspace/downloads}
    egress:
      allow: ["*.readthedocs.io:443"]
```

## References
- OWASP MCP Top 10: MCP10 context injection and over-sharing; MCP01 token mismanagement and secret exposure.
- OWASP LLM02 sensitive information disclosure.
- CWE-200 (exposure of sensitive information to an unauthorized actor); CWE-668 (exposure of resource to wrong sphere).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mcpspec.analysis.graph import Hop, ReaderIndex, nearest_flow
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.perf import quick_init
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.graph._common import Evidence, chain, graph_of, open_egress, related_places, sensitivity
from mcpspec.rules.grouping import SHOWN, listing


@quick_init
@dataclass(frozen=True, slots=True)
class Reach:
    """Where a server may send: anywhere, or its allow entries (text -> position in the allow list)."""

    anywhere: bool
    entries: dict[str, int]

    @property
    def key(self) -> frozenset[str]:
        return frozenset(self.entries)


def check(plan: Plan) -> Iterator[Finding]:
    graph = graph_of(plan)
    reach = {server.name: reach_of(server) for server in facts.launched(plan)}
    # Servers known to reach no new egress, per set of allow entries the searching source has.
    dead: dict[frozenset[str], set[str]] = {}
    # Only a server with some egress can be a sink: index those among each shared path's readers.
    likely = ReaderIndex(graph, lambda name: name in reach and (reach[name].anywhere or bool(reach[name].entries)))
    said: dict[tuple[str, tuple[str, ...]], tuple[str, list[Related]]] = {}  # sends(), per sink and what it adds
    for server in facts.launched(plan):
        own = reach[server.name]
        if own.anywhere:
            continue  # it sends anywhere itself: that is NW002's finding
        why = sensitivity(server)
        if why is None:
            continue
        known = own.key
        found = nearest_flow(graph, server.name, widens(reach, known), dead.setdefault(known, set()), likely)
        if found is not None:
            name, hops = found
            sink = plan.servers[name]
            yield finding(server, why, hops, sink, sends(sink, reach[name], known, said))


def reach_of(server: EffectiveSandbox) -> Reach:
    return Reach(facts.egress_open(server), {entry.text: position for position, entry in enumerate(server.egress.allow)})


def widens(reach: dict[str, Reach], known: frozenset[str]) -> Callable[[str], bool]:
    """Whether a server may send somewhere a source allowed ``known`` may not."""

    def wanted(name: str) -> bool:
        sink = reach.get(name)
        return sink is not None and (sink.anywhere or any(text not in known for text in sink.entries))

    return wanted


def sends(sink: EffectiveSandbox, reach: Reach, known: frozenset[str], said: dict[tuple[str, tuple[str, ...]], tuple[str, list[Related]]]) -> tuple[str, list[Related]]:
    """What the sink may reach that the source may not, and the egress entries that allow it.

    ``said`` remembers the answer per sink and set of new entries: a sink is the nearest of several sources.
    """
    new = () if reach.anywhere else tuple([text for text in reach.entries if text not in known])
    key = (sink.name, new)
    found = said.get(key)
    if found is None:
        found = said[key] = _sends(sink, reach, new)
    return found


def _sends(sink: EffectiveSandbox, reach: Reach, new: tuple[str, ...]) -> tuple[str, list[Related]]:
    """``sends`` of a sink that reaches ``new`` (its entries the source lacks), worked out."""
    if reach.anywhere:
        out = open_egress(sink)
        return out.phrase, [out.related]
    egress = [Related(facts.entry_path(sink, "allow", reach.entries[text]), f"{sink.name} may connect to {text}") for text in new[:SHOWN]]
    return f"sends to {listing(new)}", egress


def finding(source: EffectiveSandbox, why: Evidence, hops: list[Hop], sink: EffectiveSandbox, sent: tuple[str, list[Related]]) -> Finding:
    phrase, egress = sent
    steps = chain(f"{source.name} {why.phrase}", *(hop.note for hop in hops), f"{sink.name} {phrase}")
    related = [why.related, *(Related(hop.path, hop.note) for hop in hops), *egress]
    return Finding(path=source.path, message=f"data from server '{source.name}' can leave through '{sink.name}': {steps}", related=related_places(related))


RULE = Rule(
    id="GR005",
    slug="multi-hop-exfiltration",
    severity="high",
    summary="Data from a sensitive server reaches, through shared paths or sandboxes, a server with wider egress",
    check=check,
    doc=__doc__ or "",
)
