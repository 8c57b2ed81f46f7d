"""
## What it does
For each agent (one model context), checks whether the tools it can call
together read untrusted content, read private data, and send data out, with
at least one sending tool that runs without a person's approval.

A tool sends data out when it declares `external_send` or `exports_data`, or
when its server's egress lets it: a server with open egress (`egress.default:
allow`), or allowed to reach a host anyone can write to (a paste site, a
webhook inbox, a gist, a wildcard over object storage: the hosts NW004
knows), can carry data out in any call, whatever its tools declare. The
finding then names that hop (`open egress`) and the egress line.

## Why is this risky
This is the lethal trifecta: text an attacker controls (a web page, an issue,
an email) reaches the model through one tool and instructs it to read private
data with a second tool and send it out with a third. No single server is at
fault, so per-server review misses it; only the combination in one model
context makes the exfiltration possible. An approval on the sending tool, or
splitting the tools across agents, breaks the chain.

Sending is wider than it looks. A fetch tool on open egress sends whatever
the model puts in the URL. Chat tools that post messages (Slack, Discord,
Microsoft Teams, Mattermost) send data out twice over: the message itself,
and every link in it, which the chat service unfurls (fetches for a preview)
from its own servers, so a URL carrying private data reaches the attacker's
host even when nobody clicks it. Declare such tools `external_send`; when
the sending tool is a chat service's, the finding says so.

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

from collections.abc import Iterator, Sequence

from mcpspec.analysis.graph import TrustGraph
from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.graph._common import AgentTool, graph_of, implied_send, reads_private, reads_untrusted, sends_out, tools_by_agent, ungated


def check(plan: Plan) -> Iterator[Finding]:
    graph = graph_of(plan)
    for agent, tools in tools_by_agent(plan).items():
        untrusted = [t for t in tools if reads_untrusted(t)]
        private = [t for t in tools if reads_private(t)]
        if not (untrusted and private):
            continue
        sink = _sink(plan, graph, tools)
        if sink is None:
            continue
        source, secret = untrusted[0], private[0]
        implied = implied_send(graph, sink)
        how = "sends it out without approval" if implied is None else f"sends it out without approval ({implied.hop})"
        if chat_service(sink):
            how += ", and the chat service unfurls any link in it from its own servers"
        chain = f"{source.label} reads untrusted content -> {secret.label} reads private data -> {sink.label} {how}"
        related = [
            Related(source.path, f"{source.label} brings untrusted content into the context"),
            Related(secret.path, f"{secret.label} reads private data into the same context"),
            Related(sink.path, f"{sink.label} can send it out with no approval"),
        ]
        if implied is not None:
            related.append(Related(implied.path, f"{implied.hop}: {implied.note}"))
        yield Finding(path=("agents", agent), message=f"agent '{agent}' holds the lethal trifecta: {chain}", related=tuple(related))


CHAT_SERVICES = ("slack", "discord", "teams", "mattermost", "rocketchat", "rocket.chat", "zulip", "telegram", "webex")


def chat_service(item: AgentTool) -> bool:
    """Whether the tool posts to a chat service that unfurls links (judged by the server's and tool's names and command)."""
    words = " ".join((item.server.name, item.name, *item.server.command[:3], item.server.package.name if item.server.package else "")).lower()
    return any(service in words for service in CHAT_SERVICES)


def _sink(plan: Plan, graph: TrustGraph, tools: Sequence[AgentTool]) -> AgentTool | None:
    """An unapproved tool that sends data out: one that declares it first, else one whose server's egress does
    (preferring a tool that reads untrusted content, such as fetch: the model already steers where it goes)."""
    declared = [t for t in tools if sends_out(t) and ungated(plan, t)]
    if declared:
        return declared[0]
    implied = [t for t in tools if implied_send(graph, t) is not None and ungated(plan, t)]
    return next((t for t in implied if reads_untrusted(t)), implied[0] if implied else None)


RULE = Rule(
    id="GR001",
    slug="lethal-trifecta",
    severity="critical",
    summary="One agent's tools read untrusted content, read private data and send data out unapproved",
    check=check,
    doc=__doc__ or "",
)
