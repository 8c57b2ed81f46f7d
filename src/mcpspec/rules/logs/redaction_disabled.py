"""
## What it does
Flags a server whose logs are not redacted (`logging.redact: false`), and names
the secrets it holds when it holds any.

## Why is this risky
Redaction masks the secrets handed to a server and secret-shaped strings (API
keys, tokens, private keys, passwords in URLs) before a log line is written.
Turned off, a credential that appears in an argument, an error message or a
tool result is stored in clear text in every log the server writes, readable by
anyone with access to the log store and kept for as long as the logs are. A
server that holds secrets is the likeliest to echo them: in connection errors,
debug output or a prompt-injected "print your environment".

## Example
```yaml
version: 1
project: demo
secrets:
  tracker:
    provider: env
    ref: TRACKER_TOKEN
servers:
  issues:
    command: [mcp-server-issues]
    secrets:
      - {use: tracker, as: {env: TRACKER_TOKEN}}
    logging:
      redact: false
    tools:
      list_issues: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  tracker:
    provider: env
    ref: TRACKER_TOKEN
servers:
  issues:
    command: [mcp-server-issues]
    secrets:
      - {use: tracker, as: {env: TRACKER_TOKEN}}
    logging:
      redact: true
    tools:
      list_issues: {effects: [reads_private]}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure (secrets in protocol logs)
- OWASP Top 10 for LLM Applications 2025: LLM02 Sensitive Information Disclosure
- CWE-532: Insertion of Sensitive Information into Log File
- CWE-312: Cleartext Storage of Sensitive Information
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import by_origin, commas, named, quoted, who


def secret_names(server: EffectiveSandbox) -> str:
    """``secret 'a'`` or ``secrets 'a', 'b'``."""
    return named("secret", dict.fromkeys(grant.name for grant in server.secrets), commas)


def message(group: list[EffectiveSandbox]) -> str:
    text = f"redaction is off for {who(group, commas)}"
    holders = [server for server in group if facts.holds_secrets(server)]
    if len(group) == 1 and holders:
        return f"{text}, which holds {secret_names(holders[0])}"
    if holders:
        return f"{text}; secrets held by {commas(quoted(server.name for server in holders))} may be logged in clear"
    return text


def check(plan: Plan) -> Iterator[Finding]:
    unredacted = [server for server in plan.servers.values() if not server.logging.redact]
    for path, group in by_origin(unredacted, "logging.redact").items():
        related = tuple(
            Related(grant.path, f"secret '{grant.name}' is handed to server '{server.name}' here")
            for server in group
            for grant in server.secrets
        )
        yield Finding(path=path, message=message(group), related=related)


RULE = Rule(
    id="LG004",
    slug="redaction-disabled",
    severity="high",
    summary="Secrets and secret-shaped strings are not masked in logs",
    check=check,
    doc=__doc__ or "",
)
