"""
## What it does
Flags a tool name that two or more servers of one agent declare.

## Why is this risky
An agent sees the tools of all its servers side by side, and a model picks a
tool by its name. When two servers offer the same name, the one the client
happens to keep wins: a server can shadow another's tool (a `send_email` that
goes elsewhere) without either server changing. `mcpspec run FILE --agent NAME`
serves every server of the agent as one MCP server and shows such a name as
`SERVER__NAME` on each server, so neither is hidden and each call still reaches
the server that owns it; the prefixed names are what the model then sees, and
a prefixed name that equals another server's tool is left out, and so is that tool. Rename one of
the tools at its server, or give the servers to different agents, so the names
the model sees are the ones you reviewed.

## Example
```yaml
version: 1
project: demo
agents:
  assistant: {servers: [mail, chat]}
servers:
  mail:
    command: [mcp-mail]
    tools:
      send: {effects: [external_send]}
  chat:
    command: [mcp-chat]
    tools:
      send: {effects: [external_send]}
```

## Use instead
```yaml
version: 1
project: demo
agents: {assistant: {servers: [mail, chat]}}
servers:
  chat:
    command: [mcp-chat]
    tools:
      post: {effects: [external_send]}   # renamed at the server
  mail:
    command: [mcp-mail]
    tools:
      send: {effects: [external_send]}
```

## References
- MCP specification, Server: Tools (tool names are unique within one server only)
- OWASP MCP Top 10: MCP03 Tool Poisoning (tool shadowing)
- docs/run.md, "Several servers behind one endpoint"
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.run.names import SEPARATOR, collisions, exposed


def check(plan: Plan) -> Iterator[Finding]:
    reported: set[tuple[str, str]] = set()
    for agent, names in plan.agents.items():
        offers = {name: list(plan.servers[name].tools) for name in names if name in plan.servers}
        for tool, servers in collisions(offers).items():
            shown = " and ".join(f"{server}{SEPARATOR}{tool}" for server in servers)
            for server in servers[1:]:
                if (server, tool) in reported:
                    continue
                reported.add((server, tool))
                yield Finding(
                    path=(*plan.servers[server].path, "tools", tool),
                    message=f"agent '{agent}' uses servers {', '.join(repr(s) for s in servers)}, which {'both' if len(servers) == 2 else 'all'} declare tool {tool!r}: `mcpspec run --agent {agent}` shows it as {shown}",
                    items=(tool,),
                )
        for prefixed in exposed(offers)[1]:
            server, tool = prefixed.split(SEPARATOR, 1)
            yield Finding(
                path=("agents", agent),
                message=f"agent '{agent}': server {server!r} would show its tool {tool!r} as {prefixed!r}, a name another server declares: `mcpspec run --agent {agent}` leaves it out",
                items=(prefixed,),
            )


RULE = Rule(
    id="TS011",
    slug="agent-tool-collision",
    severity="medium",
    summary="Two servers of one agent declare the same tool name",
    check=check,
    doc=__doc__ or "",
)
