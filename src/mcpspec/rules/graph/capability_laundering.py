"""
## What it does
Finds a host path that one server can write and a different server executes
or interprets: the consumer runs code or builds packages, or the shared place
is a `.git` directory, a hooks directory, a client or agent config directory,
or the consumer's working directory. Shared means the same path or one inside
the other.

## Why is this risky
Capability laundering: the writer may only be allowed to "write files", but
what it writes becomes code or flags in the consumer. A prompt-injected
filesystem or fetch server plants a build script, a git hook, a ref named
`--upload-pack=...` or an MCP client config, and the code-running server (or
git, or the client) executes it with its own, larger privileges. Each server
looks harmless on its own; the shared directory is the exploit path.

## Example
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    shared: {mode: rw}
servers:
  fetch:
    command: [mcp-fetch]
    mounts:
      - {from: workspace.shared, to: /downloads}
  runner:
    kind: code-exec
    command: [mcp-runner]
    mounts:
      - {from: workspace.shared, to: /work}
```

## Use instead
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    downloads: {mode: rw}
    work: {mode: rw}
servers:
  fetch:
    command: [mcp-fetch]
    mounts:
      - {from: workspace.downloads, to: /downloads}
  runner:
    kind: code-exec
    command: [mcp-runner]
    mounts:
      - {from: workspace.work, to: /work}
```

## References
- Capability laundering through shared resources; git flag injection via files another server wrote (mcp-server-git CVE-2025-68143, CVE-2025-68144, CVE-2025-68145).
- OWASP MCP Top 10: MCP05 command injection and execution; MCP02 privilege escalation via scope creep.
- CWE-94 (code injection); CWE-88 (argument injection); CWE-732 (incorrect permission assignment for critical resource).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from mcpspec.analysis.graph import MountRef, TrustGraph
from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.perf import quick_init
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.graph._common import chain, graph_of, mount_of, related_places
from mcpspec.rules.grouping import SHOWN, quoted

HOOK_DIRS = ("hooks", ".githooks", ".husky")


@quick_init
@dataclass(frozen=True, slots=True)
class Use:
    """A consumer's mount of a written path, and what makes the consumer run what is there."""

    mount: MountRef
    target: str
    how: str
    places: tuple[Related, Related]  # where the consumer reads the path, and what makes it run what is there


def _use(ref: MountRef, target: str, how: str, why: tuple[SpecPath, str]) -> Use:
    return Use(ref, target, how, (Related(ref.path, f"{ref.server} reads {ref.source} here"), Related(*why)))


def check(plan: Plan) -> Iterator[Finding]:
    graph = graph_of(plan)
    places: dict[str, str | None] = {}
    codes: dict[str, tuple[SpecPath, str] | None] = {}
    reported: set[SpecPath] = set()
    for source, refs in graph.mounts_at.items():
        writers = [ref for ref in refs if ref.writable and ref.path not in reported]
        if not writers:
            continue
        # Who runs what lies in ``source`` does not depend on the writer: work it out once per path.
        uses: dict[str, Use] = {}
        for ref in graph.overlapping(source):
            if ref.server not in uses:
                use = consumes(graph, ref, source, places, codes)
                if use is not None:
                    uses[ref.server] = use
        # What a finding says of the consumers depends only on which of them is the writer itself.
        told: dict[str | None, Consumers | None] = {}
        for writer in writers:
            skip = writer.server if writer.server in uses else None
            if skip not in told:
                others = [use for _, use in _first(uses, writer.server, SHOWN)]
                told[skip] = consumers(others, len(uses) - (skip is not None)) if others else None
            said = told[skip]
            if said is not None:
                reported.add(writer.path)
                yield finding(writer, said)


def _first(uses: dict[str, Use], skip: str, limit: int) -> Iterator[tuple[str, Use]]:
    count = 0
    for name, use in uses.items():
        if name == skip:
            continue
        if count == limit:
            return
        count += 1
        yield name, use


def consumes(
    graph: TrustGraph, ref: MountRef, written: str, places: dict[str, str | None], codes: dict[str, tuple[SpecPath, str] | None]
) -> Use | None:
    """How the server of mount ``ref`` runs or interprets what a writer of ``written`` leaves there, if it does.

    ``places`` and ``codes`` remember, per check, what ``interpreted_place`` says of a path and ``runs_code`` of a server.
    """
    server = graph.server(ref.server)
    shared = ref.source if ref.source == written or facts.contains(written, ref.source) else written
    if shared not in places:
        places[shared] = interpreted_place(shared)
    place = places[shared]
    if place is not None:
        return _use(ref, mount_of(server, ref).target, f"{server.name} interprets {shared} ({place})", (ref.path, f"{server.name} reads {ref.source} here"))
    if server.name not in codes:
        codes[server.name] = runs_code(server)
    code = codes[server.name]
    if code is not None:
        return _use(ref, mount_of(server, ref).target, f"{server.name} {code[1]}", (code[0], f"{server.name} {code[1]}"))
    if server.workdir is None:
        return None
    mount = mount_of(server, ref)  # asked only here, when the server may use what it mounts
    inside = sandbox_place(ref.source, mount.target, shared)
    if inside is not None and facts.overlaps(server.workdir, inside):
        why = (server.origin("workdir"), f"{server.name} works in {server.workdir}")
        return _use(ref, mount.target, f"{server.name} works in it (workdir {server.workdir})", why)
    return None


def interpreted_place(shared: str) -> str | None:
    """What in ``shared`` gets run or read as configuration: git metadata, hooks, or a client's config."""
    parts = facts.components(shared)
    if ".git" in parts:
        return "git metadata: hooks, config and refs"
    if any(part in HOOK_DIRS for part in parts):
        return "hooks, run as code"
    if any(part in facts.AGENT_CONFIG_NAMES for part in parts) or in_agent_config(shared):
        return "client config: which servers and commands to launch"
    return None


# Every client config path lies in a home directory (``~/...``, no ``{uid}``): only a path that
# some spelling puts there can lie inside one.
_HOME_CONFIG_ONLY = all(path.startswith("~/") and facts.UID not in path for path in facts.AGENT_CONFIG_PATHS)


def in_agent_config(shared: str) -> bool:
    """Whether ``shared`` is, or lies inside, a client config path (``facts.overlapping`` finds it inside one)."""
    if _HOME_CONFIG_ONLY and not any(form.startswith("~/") for form in facts.spellings(shared)):
        return False  # no spelling of it is in a home directory: skip the check of each config path
    return any(inside for _, inside in facts.overlapping(shared, facts.AGENT_CONFIG_PATHS))


def runs_code(server: EffectiveSandbox) -> tuple[SpecPath, str] | None:
    """(where it says so, what it does) when the server runs code or builds packages."""
    for name in facts.tools_with(server, "exec"):
        return facts.tool_path(server, name), f"runs code (tool '{name}' has effect exec)"
    if server.kind == "code-exec":
        return (*server.path, "kind"), "runs code (kind code-exec)"
    if server.kind == "package":
        return (*server.path, "kind"), "installs and builds packages (kind package)"
    return None


def sandbox_place(source: str, target: str, shared: str) -> str | None:
    """Where ``shared`` (``source`` or a path inside it) appears inside the sandbox that mounts ``source`` at ``target``."""
    outer, inner = facts.components(source), facts.components(shared)
    if inner[: len(outer)] != outer:
        return None  # e.g. a ~ path under a mount of /: where the home lies is not known
    rest = inner[len(outer):]
    return "/".join([target.rstrip("/"), *rest]) if rest else target


@quick_init
@dataclass(frozen=True, slots=True)
class Consumers:
    """What a finding says of the servers that run what a writer leaves: the chain after the writer's step, and their places."""

    steps: str
    places: tuple[Related, ...]  # each consumer's places, in order
    related: tuple[Related, ...]  # related_places of them
    paths: frozenset[SpecPath]


def consumers(uses: list[Use], total: int) -> Consumers:
    """The consumers' part of a finding: ``uses`` shown of ``total``."""
    first = uses[0]
    steps = chain(f"{first.mount.server} reads {first.mount.source} at {first.target}", first.how)
    more = [use.mount.server for use in uses[1:SHOWN]]
    if more:
        rest = total - 1 - len(more)
        also = ", ".join(quoted(more)) + (f" and {rest} more" if rest else "")
        steps += f" (also {also})"
    places = tuple([place for use in uses for place in use.places])
    return Consumers(steps, places, related_places(list(places)), frozenset(place.path for place in places))


def finding(writer: MountRef, said: Consumers) -> Finding:
    steps = chain(f"{writer.server} writes {writer.source}", said.steps)
    write = Related(writer.path, f"{writer.server} writes {writer.source} here")
    # related_places of the writer's place and the consumers': when no consumer's place is the writer's, theirs merge alone, once.
    related = related_places([write, *said.places]) if writer.path in said.paths else (write, *said.related)
    return Finding(path=writer.path, message=f"server '{writer.server}' can plant what another server runs: {steps}", related=related)


RULE = Rule(
    id="GR004",
    slug="capability-laundering",
    severity="high",
    summary="A server writes a path that another server executes or interprets",
    check=check,
    doc=__doc__ or "",
)
