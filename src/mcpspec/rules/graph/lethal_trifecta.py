"""
## What it does
For each agent (one model context), checks whether the tools it can call
together read untrusted content, read private data, and send data out, with
at least one sending tool that runs without a person's approval.

## Why is this risky
This is the lethal trifecta: text an attacker controls (a web page, an issue,
an email) reaches the model through one tool and instructs it to read private
data with a second tool and send it out with a third. No single server is at
fault, so per-server review misses it; only the combination in one model
context makes the exfiltration possible. An approval on the sending tool, or
splitting the tools across agents, breaks the chain.

## Example
```yaml
version: 1
project: demo
agents:
  assistant: {servers: [web, mail]}
servers:
  web:
    command: [mcp-fetch]
    tools:
      fetch: {effects: [reads_untrusted]}
  mail:
    command: [mcp-mail]
    tools:
      read_inbox: {effects: [reads_private]}
      send: {effects: [external_send], approval: never}
```

## Use instead
```yaml
version: 1
project: demo
agents:
  assistant: {servers: [web, mail]}
servers:
  web:
    command: [mcp-fetch]
    tools:
      fetch: {effects: [reads_untrusted]}
  mail:
    command: [mcp-mail]
    tools:
      read_inbox: {effects: [reads_private]}
      send: {effects: [external_send], approval: always}
```

## References
- Simon Willison, "The lethal trifecta for AI agents" (2025); Invariant Labs / Snyk toxic flow TF001.
- OWASP MCP Top 10: MCP06 prompt injection via contextual payloads; MCP10 over-sharing of context.
- MCP specification, tools: clients SHOULD keep a human in the loop and show tool inputs before calling.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.graph._common import agent_tools, reads_private, reads_untrusted, sends_out, ungated


def check(plan: Plan) -> Iterator[Finding]:
    for agent in plan.agents:
        tools = list(agent_tools(plan, agent))
        untrusted = [t for t in tools if reads_untrusted(t)]
        private = [t for t in tools if reads_private(t)]
        sinks = [t for t in tools if sends_out(t) and ungated(plan, t)]
        if not (untrusted and private and sinks):
            continue
        source, secret, sink = untrusted[0], private[0], sinks[0]
        chain = f"{source.label} reads untrusted content -> {secret.label} reads private data -> {sink.label} sends it out without approval"
        yield Finding(
            path=("agents", agent),
            message=f"agent '{agent}' holds the lethal trifecta: {chain}",
            related=(
                Related(source.path, f"{source.label} brings untrusted content into the context"),
                Related(secret.path, f"{secret.label} reads private data into the same context"),
                Related(sink.path, f"{sink.label} can send it out with no approval"),
            ),
        )


RULE = Rule(
    id="GR001",
    slug="lethal-trifecta",
    severity="critical",
    summary="One agent's tools read untrusted content, read private data and send data out unapproved",
    check=check,
    doc=__doc__ or "",
)
