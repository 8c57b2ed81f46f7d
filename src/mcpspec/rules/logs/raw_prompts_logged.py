"""
## What it does
Flags a server that logs prompts verbatim (`logging.raw_prompts: true`).

## Why is this risky
Prompts carry whatever the user and the model put in the context: pasted
credentials, customer records, private source code, and the text of every
document and web page a tool returned. Logged verbatim, all of it lands in a
log store that is usually kept longer, read by more people and protected less
than the systems the data came from. Redaction only masks secret-shaped strings;
it does not recognize personal data or proprietary text. A verbatim prompt log
is also a ready-made collection of any prompt-injection payloads, replayable
by whoever can read the logs.

## Example
```yaml
version: 1
project: demo
servers:
  notes:
    command: [mcp-server-notes]
    logging:
      raw_prompts: true
    tools:
      search_notes: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  notes:
    command: [mcp-server-notes]
    logging:
      raw_prompts: false
      record: [tool, caller, arguments_hash, exit_status]
    tools:
      search_notes: {effects: [reads_private]}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure (secrets in protocol logs), MCP10 Context Injection & Over-Sharing
- OWASP Top 10 for LLM Applications 2025: LLM02 Sensitive Information Disclosure
- CWE-532: Insertion of Sensitive Information into Log File
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import by_origin, commas, who


def check(plan: Plan) -> Iterator[Finding]:
    logged = [server for server in plan.servers.values() if server.logging.raw_prompts]
    for path, group in by_origin(logged, "logging.raw_prompts").items():
        unredacted = [server for server in group if not server.logging.redact]
        note = ", unredacted" if len(unredacted) == len(group) else ""
        yield Finding(path=path, message=f"prompts are logged verbatim{note} for {who(group, commas)}")


RULE = Rule(
    id="LG002",
    slug="raw-prompts-logged",
    severity="high",
    summary="Prompts are logged verbatim",
    check=check,
    doc=__doc__ or "",
)
