"""
## What it does
Flags a server that logs the full output of its tool calls
(`logging.full_output: true`), and says when that output is likely to hold
private data or secrets.

## Why is this risky
Tool output is the data itself: query results, file contents, fetched pages,
API responses. Logged in full, it is copied into a store with its own, usually
weaker, access control and longer retention. On a server that reads private
data (`reads_private` or `kind: data`) the log becomes a second copy of that
data; on a server that holds secrets, an error message or a debug dump can carry
the credential into the log, where redaction only catches secret-shaped strings.
Audit needs to know that a call happened and how it ended, not what it returned.

## Example
```yaml
version: 1
project: demo
servers:
  warehouse:
    kind: data
    command: [mcp-server-warehouse]
    logging:
      full_output: true
    tools:
      query: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  warehouse:
    kind: data
    command: [mcp-server-warehouse]
    logging:
      full_output: false
      record: [tool, caller, arguments_hash, exit_status]
    tools:
      query: {effects: [reads_private]}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP10 Context Injection & Over-Sharing
- OWASP Top 10 for LLM Applications 2025: LLM02 Sensitive Information Disclosure
- CWE-532: Insertion of Sensitive Information into Log File
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import by_origin, commas, quoted, who


def why_sensitive(server: EffectiveSandbox) -> str:
    """'reads private data and holds secrets', or '' when neither applies."""
    reasons = []
    if facts.reads_private(server):
        reasons.append("reads private data")
    if facts.holds_secrets(server):
        reasons.append("holds secrets")
    return " and ".join(reasons)


def message(group: list[EffectiveSandbox]) -> str:
    text = f"full tool output is logged for {who(group, commas)}"
    if len(group) == 1:
        reason = why_sensitive(group[0])
        return f"{text}, which {reason}" if reason else text
    private = commas(quoted(server.name for server in group if facts.reads_private(server)))
    secret = commas(quoted(server.name for server in group if facts.holds_secrets(server)))
    carried = [f"private data read by {private}" if private else "", f"secrets held by {secret}" if secret else ""]
    joined = " and ".join(part for part in carried if part)
    return f"{text}; it may carry {joined}" if joined else text


def check(plan: Plan) -> Iterator[Finding]:
    logged = [server for server in plan.servers.values() if server.logging.full_output]
    for path, group in by_origin(logged, "logging.full_output").items():
        yield Finding(path=path, message=message(group))


RULE = Rule(
    id="LG003",
    slug="full-output-logged",
    severity="medium",
    summary="Full tool output is logged",
    check=check,
    doc=__doc__ or "",
)
