"""
## What it does
Finds secrets bound to two or more servers, and says when those servers
differ in kind, placement or trust, in particular when a third-party server
or one that reads untrusted content holds the same credential as a
first-party one.

## Why is this risky
A credential is only as safe as the weakest server holding it. Whoever
compromises one holder (a malicious package update, a prompt-injected fetch
server, a bug in a third-party bridge) gets a token that also works for
everything the other holders do, so the blast radius of the weakest server
becomes that of the strongest. It also erases accountability: the audit trail
of the downstream service cannot tell the servers apart. Give each server its
own credential, scoped to what that server needs.

## Example
```yaml
version: 1
project: demo
secrets:
  github: {provider: env, ref: GITHUB_TOKEN}
servers:
  repo:
    trust: first-party
    command: [mcp-repo]
    secrets:
      - {use: github, as: {env: GITHUB_TOKEN}}
  fetch:
    trust: third-party
    command: [mcp-fetch]
    secrets:
      - {use: github, as: {env: GITHUB_TOKEN}}
    tools:
      fetch: {effects: [reads_untrusted]}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  github-repo: {provider: env, ref: GITHUB_TOKEN_REPO, scopes: [contents:write]}
  github-read: {provider: env, ref: GITHUB_TOKEN_READ, scopes: [public_repo:read]}
servers:
  repo:
    trust: first-party
    command: [mcp-repo]
    secrets:
      - {use: github-repo, as: {env: GITHUB_TOKEN}}
  fetch:
    trust: third-party
    command: [mcp-fetch]
    secrets:
      - {use: github-read, as: {env: GITHUB_TOKEN}}
    tools:
      fetch: {effects: [reads_untrusted]}
```

## References
- MCP specification, security best practices: token passthrough; scope minimization.
- OWASP MCP Top 10: MCP01 token mismanagement and secret exposure; MCP02 privilege escalation via scope creep.
- CWE-522 (insufficiently protected credentials); CWE-250 (execution with unnecessary privileges).
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.analysis.graph import Edge
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.graph._common import RELATED_LIMIT, graph_of
from mcpspec.rules.grouping import listing, quoted


def check(plan: Plan) -> Iterator[Finding]:
    graph = graph_of(plan)
    for name in plan.spec.secrets:
        bindings = graph.secret_holders(name)
        holders = [graph.server(server) for server in dict.fromkeys(edge.source.removeprefix("server:") for edge in bindings)]
        if len(holders) < 2:
            continue
        message = f"secret '{name}' is bound to {len(holders)} servers ({listing(quoted(s.name for s in holders))})"
        notes = differences(holders)
        if notes:
            message += ", " + "; ".join(notes)
        yield Finding(path=("secrets", name), message=message, related=related(graph.plan, bindings))


def differences(holders: list[EffectiveSandbox]) -> list[str]:
    """How the holders differ, the worst mix (low trust beside first-party) last."""
    notes = []
    for label, values in (
        ("kinds", [s.kind for s in holders]),
        ("placements", [s.placement for s in holders]),
        ("trust", [s.trust for s in holders]),
    ):
        distinct = list(dict.fromkeys(values))
        if len(distinct) > 1:
            notes.append(f"{label} {'differ' if label != 'trust' else 'differs'} ({listing(distinct)})")
    first = [s for s in holders if s.trust == "first-party"]
    for weak in (s for s in holders if s.trust == "third-party" or facts.reads_untrusted(s)):
        strong = next((s for s in first if s is not weak), None)
        if strong is not None:
            notes.append(f"worse, '{weak.name}' ({traits(weak)}) holds the same credential as first-party '{strong.name}'")
            break
    return notes


def traits(server: EffectiveSandbox) -> str:
    """``third-party``, ``reads untrusted content`` or both."""
    parts = ["third-party"] if server.trust == "third-party" else []
    if facts.reads_untrusted(server):
        parts.append("reads untrusted content")
    return ", ".join(parts)


def related(plan: Plan, bindings: list[Edge]) -> tuple[Related, ...]:
    items = []
    for edge in bindings[:RELATED_LIMIT]:
        server = plan.servers[edge.source.removeprefix("server:")]
        items.append(Related(edge.path, f"handed to {server.name} ({server.trust}, kind {server.kind}, placement {server.placement})"))
    return tuple(items)


RULE = Rule(
    id="GR003",
    slug="shared-secret",
    severity="high",
    summary="One secret is bound to two or more servers",
    check=check,
    doc=__doc__ or "",
)
