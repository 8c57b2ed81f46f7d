"""
## What it does
For each agent (one model context), checks whether one of the tools it can
call reads untrusted content while another (or the same one) deploys or
destroys something without a person's approval.

## Why is this risky
This is the destructive toxic flow: a web page, issue or email an attacker
wrote reaches the model through the reading tool and tells it to call the
destructive one ("roll back production", "delete the bucket"). The model cannot
tell instructions in data from the user's, so every unapproved destructive
tool in the same context is one injected sentence away. An approval on the
destructive tool, or moving it to an agent that reads no untrusted content,
breaks the chain.

## Example
```yaml
version: 1
project: demo
agents:
  ops: {servers: [web, cloud]}
servers:
  web:
    command: [mcp-fetch]
    tools:
      fetch: {effects: [reads_untrusted]}
  cloud:
    command: [mcp-cloud]
    tools:
      delete_bucket: {effects: [destructive], approval: never}
```

## Use instead
```yaml
version: 1
project: demo
agents:
  ops: {servers: [web, cloud]}
servers:
  web:
    command: [mcp-fetch]
    tools:
      fetch: {effects: [reads_untrusted]}
  cloud:
    command: [mcp-cloud]
    tools:
      delete_bucket: {effects: [destructive], approval: always}
```

## References
- Invariant Labs / Snyk agent-scan toxic flow TF002 (destructive toxic flow).
- OWASP MCP Top 10: MCP06 prompt injection via contextual payloads; OWASP LLM06 excessive agency.
- MCP specification, tools: `destructiveHint`; clients SHOULD keep a human in the loop for tool calls.
- CWE-862 (missing authorization).
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.graph._common import AgentTool, chain, reads_untrusted, related_hops, tools_by_agent, ungated
from mcpspec.rules.grouping import listing

DESTRUCTIVE = ("deploy", "destructive")


def check(plan: Plan) -> Iterator[Finding]:
    for agent, tools in tools_by_agent(plan).items():
        untrusted = [t for t in tools if reads_untrusted(t)]
        sinks = [t for t in tools if destroys(t) and ungated(plan, t)]
        if not (untrusted and sinks):
            continue
        source = untrusted[0]
        verb = does(sinks[0]) if len(sinks) == 1 else "deploy or destroy"
        steps = chain(f"{source.label} reads untrusted content", f"{listing([t.label for t in sinks])} {verb} without approval")
        hops = [(source.path, f"{source.label} brings untrusted content into the context")]
        hops += [(t.path, f"{t.label} {does(t)} with no approval") for t in sinks]
        yield Finding(path=("agents", agent), message=f"agent '{agent}' holds a destructive toxic flow: {steps}", related=related_hops(hops))


def destroys(item: AgentTool) -> bool:
    return any(effect in item.tool.effects for effect in DESTRUCTIVE)


def does(item: AgentTool) -> str:
    """``deploys``, ``destroys`` or ``deploys and destroys``."""
    verbs = {"deploy": "deploys", "destructive": "destroys"}
    return " and ".join(verbs[effect] for effect in DESTRUCTIVE if effect in item.tool.effects)


RULE = Rule(
    id="GR002",
    slug="destructive-flow",
    severity="high",
    summary="One agent's tools read untrusted content and deploy or destroy without approval",
    check=check,
    doc=__doc__ or "",
)
