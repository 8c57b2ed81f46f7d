"""
## What it does
Flags `approvals.show_arguments: false` when some approval-gated tool sends
data out, exports data, deploys or moves money (`external_send`,
`exports_data`, `deploy`, `financial`).

## Why is this risky
For these tools the arguments are the decision: the recipient and body of an
email, the URL a request goes to, the build and environment of a deploy, the
amount and account of a payment. An approver who sees only "send_email?"
cannot spot that a prompt injection put the user's private data in the body or
an attacker's address in the recipient list, and approval becomes a reflex
click. The MCP specification asks clients to show tool inputs to the user
before calling a tool, precisely to avoid malicious or accidental data
exfiltration.

## Example
```yaml
version: 1
project: demo
servers:
  mailer:
    command: [mcp-server-mail]
    tools:
      send_email: {effects: [external_send], approval: always}
approvals:
  show_arguments: false
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
  show_arguments: true
```

## References
- MCP specification, Server > Tools > Security Considerations: clients SHOULD show tool inputs to the user before calling the server, to avoid malicious or accidental data exfiltration
- OWASP Top 10 for Agentic Applications 2026: ASI09 Human-Agent Trust Exploitation
- OWASP MCP Top 10: MCP10 Context Injection & Over-Sharing
- CWE-451: User Interface (UI) Misrepresentation of Critical Information
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import tool_path, tools
from mcpspec.rules.grouping import commas, quoted
from mcpspec.rules.review._common import does, matching

ARGUMENT_CRITICAL = frozenset({"external_send", "exports_data", "deploy", "financial"})
LISTED = 3


def check(plan: Plan) -> Iterator[Finding]:
    if plan.approvals.show_arguments:
        return
    gated = [
        (server, name, matching(tool, ARGUMENT_CRITICAL))
        for server, name, tool in tools(plan)
        if matching(tool, ARGUMENT_CRITICAL) and facts.approval_gated(plan, tool)
    ]
    if not gated:
        return
    names = commas(quoted(f"{server.name}.{name}" for server, name, _ in gated), LISTED)
    related = tuple(
        Related(tool_path(server, name), f"'{name}' {does(effects)}; its approver does not see the arguments") for server, name, effects in gated
    )
    yield Finding(
        path=("approvals", "show_arguments"),
        message=f"approvers do not see the arguments of gated tools {names}",
        related=related,
    )


RULE = Rule(
    id="HR002",
    slug="approval-hides-arguments",
    severity="medium",
    summary="Approvers do not see the arguments of tools that send, export, deploy or pay",
    check=check,
    doc=__doc__ or "",
)
