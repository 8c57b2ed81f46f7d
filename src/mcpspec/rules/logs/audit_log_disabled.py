"""
## What it does
Flags a launched server whose tool calls are not audited (`logging.audit: false`),
or whose audit lines leave out who called which tool and how it ended
(`record` without `tool`, `caller` or `exit_status`).

## Why is this risky
Without an audit line per call nobody can tell afterwards which tool ran, on
whose behalf and whether it succeeded: a prompt-injected deletion, an
exfiltrating request or a misused credential leaves no trace to investigate,
and an incident cannot be scoped. The MCP tools specification asks clients to
log tool usage for audit; OWASP MCP08 lists missing audit and telemetry as a
top-ten risk. An audit line that omits the tool, the caller or the exit status
cannot answer the first questions of an investigation.

## Example
```yaml
version: 1
project: demo
defaults:
  logging:
    audit: false
servers:
  repo:
    command: [mcp-server-git]
    tools:
      git_log: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
defaults:
  logging:
    audit: true
    record: [tool, caller, arguments_hash, exit_status, decision]
servers:
  repo:
    command: [mcp-server-git]
    tools:
      git_log: {effects: [reads_private]}
```

## References
- MCP specification, Server > Tools > Security Considerations: clients SHOULD log tool usage for audit purposes
- MCP Security Best Practices, stdio Transport Security in Proxy Scenarios: log all stdio spawns
- OWASP MCP Top 10: MCP08 Lack of Audit and Telemetry
- CWE-778: Insufficient Logging
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import by_origin, commas, who

REQUIRED_FIELDS = ("tool", "caller", "exit_status")


def audit_off(server: EffectiveSandbox) -> bool:
    return not server.logging.audit


def missing_fields(server: EffectiveSandbox) -> list[str]:
    recorded = server.logging.record
    return [name for name in REQUIRED_FIELDS if name not in recorded]


def check(plan: Plan) -> Iterator[Finding]:
    servers = list(facts.launched(plan))
    for path, group in by_origin(filter(audit_off, servers), "logging.audit").items():
        yield Finding(path=path, message=f"audit logging is off for {who(group, commas)}")
    # A record list only matters where audit lines are written at all.
    audited = [server for server in servers if not audit_off(server)]
    for path, group in by_origin(filter(missing_fields, audited), "logging.record").items():
        omitted = ", ".join(dict.fromkeys(name for server in group for name in missing_fields(server)))
        yield Finding(path=path, message=f"audit lines of {who(group, commas)} omit {omitted}")


RULE = Rule(
    id="LG001",
    slug="audit-log-disabled",
    severity="medium",
    summary="Tool calls of a launched server are not audited, or audit lines omit the tool, caller or exit status",
    check=check,
    doc=__doc__ or "",
)
