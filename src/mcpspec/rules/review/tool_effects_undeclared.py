"""
## What it does
Flags a tool declared without any `effects` (the key left out, or `effects: []`).
A tool that really does none of the listed things (a pure computation, a
formatter, a clock) says so with `effects: [none]`, which this rule accepts;
`none` stands alone, listed with another effect it is a spec error.

## Why is this risky
Effects are how this spec says what a tool does, and every other review rule
(approvals, data flows between servers, least privilege) reasons from them. A
tool without effects is invisible to those checks, and a reviewer cannot tell a
harmless lookup from a deletion. MCP's own tool annotations default to the
worst case for an unannotated tool (`destructiveHint: true`,
`openWorldHint: true`), and annotations from a server are untrusted anyway:
declare what the tool does here, where the reviewer can see it.

## Example
```yaml
version: 1
project: demo
servers:
  helper:
    command: [mcp-server-helper]
    tools:
      misc: {description: Does several things.}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  helper:
    command: [mcp-server-helper]
    tools:
      misc: {description: Summarize a local file., effects: [reads_private]}
      add: {description: Add two numbers., effects: [none]}
```

## References
- MCP specification, Server > Tools, ToolAnnotations: destructiveHint and openWorldHint default to true; clients MUST consider annotations untrusted unless they come from trusted servers
- OWASP MCP Top 10: MCP03 Tool Poisoning, MCP02 Privilege Escalation via Scope Creep
- OWASP Top 10 for LLM Applications 2025: LLM06 Excessive Agency
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import tool_path, tools


def check(plan: Plan) -> Iterator[Finding]:
    for server, name, tool in tools(plan):
        if not tool.effects:
            yield Finding(
                path=(*tool_path(server, name), "effects"),
                message=(
                    f"tool '{name}' of server '{server.name}' declares no effects, so it must be assumed destructive and open-world; "
                    "list what it does, or write 'effects: [none]' for a tool that has none"
                ),
            )


RULE = Rule(
    id="HR004",
    slug="tool-effects-undeclared",
    severity="medium",
    summary="A tool declares no effects",
    check=check,
    doc=__doc__ or "",
)
