"""
## What it does
Within one agent, finds a server with `placement: agent` that holds secrets
or reads private data while another server placed in the same agent sandbox
has open egress (`egress.default: allow`).

## Why is this risky
Servers placed in the agent's sandbox share its files, processes and network
namespace, so a per-server egress policy does not separate them: the secret
in one server's environment or files, or the private data it returns, is
within reach of the other, which may send it to any host. A prompt-injected
or compromised open-egress neighbour needs no shared mount to exfiltrate it.
Run the sensitive server (or the open one) in a dedicated sandbox, or close
the neighbour's egress.

## Example
```yaml
version: 1
project: demo
agents:
  coder: {servers: [repo, browser]}
secrets:
  deploy-key: {provider: env, ref: DEPLOY_KEY}
servers:
  repo:
    placement: agent
    command: [mcp-repo]
    secrets:
      - {use: deploy-key, as: {env: DEPLOY_KEY}}
  browser:
    placement: agent
    command: [mcp-browser]
    egress:
      default: allow
```

## Use instead
```yaml
version: 1
project: demo
agents:
  coder: {servers: [repo, browser]}
secrets:
  deploy-key: {provider: env, ref: DEPLOY_KEY}
servers:
  repo:
    placement: agent
    command: [mcp-repo]
    secrets:
      - {use: deploy-key, as: {env: DEPLOY_KEY}}
  browser:
    placement: dedicated
    command: [mcp-browser]
    egress:
      default: allow
```

## References
- OWASP MCP Top 10: MCP01 token mismanagement and secret exposure; MCP10 context injection and over-sharing.
- MCP specification, security best practices: local MCP server compromise (sandbox servers with minimal privileges).
- CWE-200 (exposure of sensitive information to an unauthorized actor); CWE-653 (improper isolation or compartmentalization).
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.graph._common import RELATED_LIMIT, Evidence, chain, open_egress, related_hops, sensitivity
from mcpspec.rules.grouping import SHOWN, listing


def check(plan: Plan) -> Iterator[Finding]:
    # sensitive server -> (why, agents, open-egress neighbours), merged over the agents it is placed in
    found: dict[str, tuple[Evidence, list[str], dict[str, EffectiveSandbox]]] = {}
    for agent, names in plan.agents.items():
        inside = [plan.servers[name] for name in names if plan.servers[name].placement == "agent"]
        open_ = [server for server in inside if facts.egress_open(server)]
        if len(inside) < 2 or not open_:
            continue
        for server in inside:
            why = sensitivity(server, credential_mounts=False)
            if why is None:
                continue
            neighbours = _others(open_, server)
            if not neighbours:
                continue
            _, agents, known = found.setdefault(server.name, (why, [], {}))
            agents.append(agent)
            for other in neighbours:
                known.setdefault(other.name, other)
    for name, (evidence, placed_in, beside) in found.items():
        yield finding(plan.servers[name], evidence, placed_in, list(beside.values()))


def _others(servers: list[EffectiveSandbox], skip: EffectiveSandbox) -> list[EffectiveSandbox]:
    """Up to RELATED_LIMIT of ``servers`` other than ``skip``, without walking the rest."""
    picked: list[EffectiveSandbox] = []
    for server in servers:
        if server is not skip:
            picked.append(server)
            if len(picked) == RELATED_LIMIT:
                break
    return picked


def finding(server: EffectiveSandbox, why: Evidence, agents: list[str], neighbours: list[EffectiveSandbox]) -> Finding:
    names = [other.name for other in neighbours]
    sandbox = f"agent '{agents[0]}'" if len(agents) == 1 else f"agents {listing([repr(a) for a in agents])}"
    shared = f"{server.name} shares the sandbox of {sandbox} (its files and network) with {listing(names, SHOWN)}"
    last = f"{names[0]} {open_egress(neighbours[0]).phrase}" if len(names) == 1 else "each of them sends anywhere (egress defaults to allow)"
    steps = chain(f"{server.name} {why.phrase}", shared, last)
    hops = [(why.related.path, why.related.note)]
    for other in neighbours:
        egress = open_egress(other).related
        hops += [((*other.path, "placement"), f"{other.name} runs in the same sandbox"), (egress.path, egress.note)]
    return Finding(path=(*server.path, "placement"), message=f"server '{server.name}' {why.phrase} beside open egress: {steps}", related=related_hops(hops))


RULE = Rule(
    id="GR007",
    slug="secrets-beside-open-egress",
    severity="medium",
    summary="A server holding secrets or private data shares the agent sandbox with a server that has open egress",
    check=check,
    doc=__doc__ or "",
)
