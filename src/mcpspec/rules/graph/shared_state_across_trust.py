"""
## What it does
Finds a state directory (a browser profile, cookie jar, memory store or
cache: a host path with a component such as `profile`, `Cookies`,
`User Data`, `memory` or `cache`, or a path a browser or memory server
mounts) that two or more servers mount, directly or one inside the other,
when their `trust` differs or only some of them read untrusted content.

## Why is this risky
State outlives the call that wrote it and is read back as trusted. A server
that reads attacker-controlled pages can write a poisoned memory entry, a
cookie or a cached response that a more trusted server later acts on; the
other way round, the untrusted server can read the trusted one's session
cookies and stored memories. Give each trust level its own state directory.

## Example
```yaml
version: 1
project: demo
servers:
  browser:
    kind: browser
    trust: third-party
    command: [mcp-browser]
    mounts:
      - {from: /srv/mcp/state/profile, to: /profile, mode: rw}
  notes:
    kind: memory
    trust: first-party
    command: [mcp-notes]
    mounts:
      - {from: /srv/mcp/state, to: /state, mode: rw}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  browser:
    kind: browser
    trust: third-party
    command: [mcp-browser]
    mounts:
      - {from: /srv/mcp/browser/profile, to: /profile, mode: rw}
  notes:
    kind: memory
    trust: first-party
    command: [mcp-notes]
    mounts:
      - {from: /srv/mcp/notes, to: /state, mode: rw}
```

## References
- OWASP Top 10 for Agentic Applications: ASI06 memory and context poisoning.
- OWASP MCP Top 10: MCP10 context injection and over-sharing.
- CWE-668 (exposure of resource to wrong sphere); CWE-472 (external control of assumed-immutable parameter).
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.analysis.graph import MountRef, TrustGraph
from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.graph._common import RELATED_LIMIT, chain, graph_of, related_hops
from mcpspec.rules.grouping import SHOWN

STATE_NAMES = frozenset({"profile", "profiles", "cookies", "user data", "memory", "cache", ".cache", "caches"})
STATE_KINDS = ("browser", "memory")


def check(plan: Plan) -> Iterator[Finding]:
    graph = graph_of(plan)
    state = {source: why for source, refs in graph.mounts_at.items() if (why := state_reason(plan, source, refs)) is not None}
    reported: set[SpecPath] = set()
    untrusted: dict[str, bool] = {}  # facts.reads_untrusted per server: a server mounts many state paths
    for source, why in state.items():
        if enclosed(graph, source, state):
            continue  # the enclosing state directory's check sees every mount of this one
        mounts: dict[str, MountRef] = {}
        for ref in graph.overlapping(source):
            mounts.setdefault(ref.server, ref)
        servers = [plan.servers[name] for name in mounts]
        if len(servers) < 2 or not mixed(servers, untrusted):
            continue
        at = graph.mounts_at[source][0]
        if at.path not in reported:
            reported.add(at.path)
            yield finding(plan, source, why, list(mounts.values()))


def state_reason(plan: Plan, source: str, refs: list[MountRef]) -> str | None:
    """Why ``source`` holds state: a state-like name in its path, or a browser or memory server mounting it."""
    for part in facts.components(source):
        lower = part.lower()
        if lower in STATE_NAMES or lower.endswith(("-profile", "_profile")):
            return f"'{part}' in its path"
    for ref in refs:
        server = plan.servers[ref.server]
        if server.kind in STATE_KINDS:
            return f"state of {server.kind} server '{server.name}'"
    return None


def enclosed(graph: TrustGraph, source: str, state: dict[str, str]) -> bool:
    ancestor = graph.parent_path.get(source)
    while ancestor is not None:
        if ancestor in state:
            return True
        ancestor = graph.parent_path.get(ancestor)
    return False


def mixed(servers: list[EffectiveSandbox], untrusted: dict[str, bool]) -> bool:
    """Whether the servers differ in trust, or only some read untrusted content (``untrusted`` remembers who does)."""
    if len({s.trust for s in servers}) > 1:
        return True
    first: bool | None = None
    for server in servers:
        reads = untrusted.get(server.name)
        if reads is None:
            reads = untrusted[server.name] = facts.reads_untrusted(server)
        if first is None:
            first = reads
        elif reads != first:
            return True
    return False


def traits(server: EffectiveSandbox) -> str:
    return f"{server.trust}, reads untrusted content" if facts.reads_untrusted(server) else server.trust


def finding(plan: Plan, source: str, why: str, mounts: list[MountRef]) -> Finding:
    def step(ref: MountRef) -> str:
        return f"{ref.server} ({traits(plan.servers[ref.server])}) {'writes' if ref.writable else 'reads'} {ref.source}"

    steps = chain(*(step(ref) for ref in mounts[:SHOWN]))
    if len(mounts) > SHOWN:
        steps += f" and {len(mounts) - SHOWN} more"
    hops = [(ref.path, f"{step(ref)} here") for ref in mounts[:RELATED_LIMIT]]
    servers = [plan.servers[ref.server] for ref in mounts]
    differ = "of different trust" if len({s.trust for s in servers}) > 1 else "of which only some read untrusted content"
    message = f"state directory {source} ({why}) is shared by servers {differ}: {steps}"
    return Finding(path=mounts[0].path, message=message, related=related_hops(hops))


RULE = Rule(
    id="GR006",
    slug="shared-state-across-trust",
    severity="medium",
    summary="A state directory is shared by servers of different trust",
    check=check,
    doc=__doc__ or "",
)
