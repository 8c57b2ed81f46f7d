"""
## What it does
Flags a tool that destroys data, moves money, deploys or changes access rights
(`destructive`, `financial`, `deploy`, `modify_access`) and is approved once per
session (`approval: per-session`) instead of on every call.

## Why is this risky
A per-session approval is one "yes" that covers every later call of the tool in
that session, with any arguments. The first call may be the harmless one the
person expected; a prompt injection that arrives later in the session then gets
a second deploy, a deletion, a refund or a new collaborator for free, and none
of them can be undone. Irreversible operations need a decision per call, with
the call's arguments in front of the person.

## Example
```yaml
version: 1
project: demo
servers:
  deployer:
    command: [mcp-server-deploy]
    tools:
      rollback: {effects: [deploy, destructive], approval: per-session}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  deployer:
    command: [mcp-server-deploy]
    tools:
      rollback: {effects: [deploy, destructive], approval: always}
```

## References
- MCP specification, Server > Tools: a human in the loop with the ability to deny tool invocations; clients SHOULD prompt for confirmation on sensitive operations
- OWASP Top 10 for Agentic Applications 2026: ASI09 Human-Agent Trust Exploitation
- OWASP Top 10 for LLM Applications 2025: LLM06 Excessive Agency
- CWE-863: Incorrect Authorization
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import tool_path, tools
from mcpspec.rules.review._common import does, matching

IRREVERSIBLE = frozenset({"destructive", "financial", "deploy", "modify_access"})


def check(plan: Plan) -> Iterator[Finding]:
    for server, name, tool in tools(plan):
        if tool.approval != "per-session":
            continue
        effects = matching(tool, IRREVERSIBLE)
        if effects:
            yield Finding(
                path=(*tool_path(server, name), "approval"),
                message=f"tool '{name}' of server '{server.name}' {does(effects)} and is approved once per session, so one yes covers every later call",
            )


RULE = Rule(
    id="HR003",
    slug="coarse-approval-irreversible",
    severity="medium",
    summary="An irreversible tool is approved once per session instead of per call",
    check=check,
    doc=__doc__ or "",
)
