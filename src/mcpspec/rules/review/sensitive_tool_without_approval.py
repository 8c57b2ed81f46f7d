"""
## What it does
Flags a tool that deploys, destroys data, sends data out, changes access
rights, moves money or exports data (`deploy`, `destructive`, `external_send`,
`modify_access`, `financial`, `exports_data`) and runs without a person's
approval: its `approval` is `never`, or it is unset and `approvals.require`
leaves out its effects.

## Why is this risky
The model decides which tool to call with which arguments, and anything in its
context can steer it: a fetched page, an issue comment, a file. Without an
approval step a single prompt injection turns into a production deploy, a
deleted repository, an email carrying private data to an attacker, a new admin
or a refund, with nobody asked. The MCP specification says there SHOULD always
be a human in the loop able to deny tool invocations, and that clients SHOULD
prompt for confirmation on sensitive operations.

## Example
```yaml
version: 1
project: demo
servers:
  mailer:
    command: [mcp-server-mail]
    tools:
      send_email: {effects: [external_send], approval: never}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  mailer:
    command: [mcp-server-mail]
    tools:
      send_email: {effects: [external_send], approval: always}
approvals:
  require: [deploy, destructive, external_send, modify_access, financial, exports_data]
```

## References
- MCP specification, Server > Tools: there SHOULD always be a human in the loop with the ability to deny tool invocations; clients SHOULD prompt for confirmation on sensitive operations
- OWASP Top 10 for LLM Applications 2025: LLM06 Excessive Agency
- OWASP Top 10 for Agentic Applications 2026: ASI02 Tool Misuse and Exploitation
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep, MCP06 Prompt Injection via Contextual Payloads
- CWE-862: Missing Authorization
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import tool_path, tools
from mcpspec.rules.review._common import EFFECT_PHRASES, does, matching

SENSITIVE = frozenset(EFFECT_PHRASES)


def check(plan: Plan) -> Iterator[Finding]:
    require_path = ("approvals", "require")
    for server, name, tool in tools(plan):
        sensitive = matching(tool, SENSITIVE)
        if not sensitive or facts.approval_gated(plan, tool):
            continue
        subject = f"tool '{name}' of server '{server.name}' {does(sensitive)}"
        if tool.approval is not None:
            yield Finding(path=(*tool_path(server, name), "approval"), message=f"{subject} with no approval (approval: never)")
            continue
        related = (Related(require_path, f"approvals.require leaves out {', '.join(sensitive)}"),) if require_path in plan.source else ()
        yield Finding(
            path=tool_path(server, name),
            message=f"{subject} with no approval (approvals.require leaves out {', '.join(sensitive)})",
            related=related,
        )


RULE = Rule(
    id="HR001",
    slug="sensitive-tool-without-approval",
    severity="high",
    summary="A tool that deploys, destroys, sends out, changes access, pays or exports runs without approval",
    check=check,
    doc=__doc__ or "",
)
