"""
## What it does
Flags a server with `placement: agent` that executes code (an `exec` tool, or
`kind: code-exec`) or reads untrusted content (a `reads_untrusted` tool, or
`kind: browser` / `kind: search`) when it holds secrets itself, or when
another server of one of its agents holds secrets or reads private data.

## Why is this risky
`placement: agent` runs the server inside the agent's own sandbox instead of
a sandbox of its own. Code it runs, or a page that talks it into running
something, then acts with everything that sandbox has: the server's own
credentials and the agent's connections to its other servers, through which
it can read private data and call tools without the model (or an approver)
seeing the calls. The MCP security best practices ask for MCP servers to run
sandboxed with minimal privileges; a server that executes code or parses
attacker-controlled content is the one that most needs its own boundary.

## Example
```yaml
version: 1
project: demo
secrets:
  gh: {provider: env, ref: GH_TOKEN_RO}
agents:
  coder:
    servers: [shell, github]
servers:
  shell:
    kind: code-exec
    placement: agent
    command: [mcp-shell]
    tools:
      run: {effects: [exec]}
  github:
    command: [github-mcp-server, stdio]
    secrets:
      - {use: gh, as: {env: GITHUB_TOKEN}}
    tools:
      get_file: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  gh: {provider: env, ref: GH_TOKEN_RO}
agents:
  coder:
    servers: [shell, github]
servers:
  shell:
    kind: code-exec
    placement: dedicated
    command: [mcp-shell]
    tools:
      run: {effects: [exec]}
  github:
    command: [github-mcp-server, stdio]
    secrets:
      - {use: gh, as: {env: GITHUB_TOKEN}}
    tools:
      get_file: {effects: [reads_private]}
```

## References
- MCP Security Best Practices: Local MCP Server Compromise ("execute MCP server commands in a sandboxed environment with minimal default privileges")
- OWASP MCP Top 10: MCP05 Command Injection & Execution, MCP01 Token Mismanagement & Secret Exposure
- OWASP Top 10 for Agentic Applications: ASI05 Unexpected Code Execution
- CWE-653 Improper Isolation or Compartmentalization
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import listing


def check(plan: Plan) -> Iterator[Finding]:
    for server in plan.servers.values():
        if server.placement != "agent":
            continue
        doing = [what for what, present in (("executes code", facts.executes_code(server)),
                                            ("reads untrusted content", facts.reads_untrusted(server))) if present]
        if not doing:
            continue
        exposed, related = exposures(plan, server)
        if exposed:
            yield Finding(
                path=(*server.path, "placement"),
                message=f"server '{server.name}' {' and '.join(doing)} in the agent's own sandbox, exposing {listing(exposed)}",
                related=tuple(related),
            )


def exposures(plan: Plan, server: EffectiveSandbox) -> tuple[list[str], list[Related]]:
    """What code in the agent's sandbox could get at: its own secrets, and fellow servers' secrets and data."""
    exposed: list[str] = []
    related: list[Related] = []
    if facts.holds_secrets(server):
        exposed.append("its own secrets")
        related += [Related(grant.path, f"secret '{grant.name}' is handed to '{server.name}' here") for grant in server.secrets]
    seen: set[str] = {server.name}
    for agent in server.agents:
        for name in plan.agents.get(agent, ()):
            other = plan.servers[name]
            if name in seen:
                continue
            seen.add(name)
            held = [what for what, present in (("secrets", facts.holds_secrets(other)),
                                               ("private data", facts.reads_private(other))) if present]
            if held:
                exposed.append(f"the {' and '.join(held)} of '{name}'")
                related.append(Related(other.path, f"server '{name}' shares agent '{agent}' and holds {' and '.join(held)}"))
    return exposed, related


RULE = Rule(
    id="PL001",
    slug="exec-server-in-agent-sandbox",
    severity="high",
    summary="A code-executing or untrusted-content server runs inside the agent's sandbox next to secrets",
    check=check,
    doc=__doc__ or "",
)
