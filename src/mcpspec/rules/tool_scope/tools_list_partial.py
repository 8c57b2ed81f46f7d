"""
## What it does
Flags a server that lists tools when tools its `tools:` does not list can
still reach the model, so the list may be partial and nothing checks it:

- the server sets `unlisted_tools: allow`: `mcpspec run` passes the other
  tools through (when `mcp-sandbox.lock` pins the server, the message names
  the pinned tools the spec leaves out);
- the server speaks HTTP and runs here: clients reach it directly, so neither
  `mcpspec run` (which hides unlisted tools of stdio servers) nor
  `mcpspec lock` (which pins and checks the full tool list of the stdio
  servers it starts) sees its `tools/list`;
- the server is `placement: external`: a client that reaches it directly
  sees every tool it offers. `mcpspec run FILE SERVER` relays a remote
  streamable HTTP server with the same allowlist as a stdio one, and
  `mcpspec lock FILE SERVER` pins it, but the spec cannot tell that clients
  go through them (docs/run.md, "Remote servers").

A stdio server with the default `unlisted_tools: deny` is not flagged:
`mcpspec run` hides every tool the spec does not list.

## Why is this risky
Every rule that reasons about what a server can do reads its tools' declared
effects: the lethal trifecta, approvals, the flow rules. A GitHub server
listed with the two tools the team uses still offers the model its other
tools (creating issues, pushing files, merging pull requests), with no
declared effect, no approval and no finding. The spec then trusts the
server's word for what it does. `mcpspec lock` pins the full list a server
offers and lint compares it with `tools:`; a server lock cannot start needs
its client restricted to the listed tools.

## Example
```yaml
version: 1
project: demo
servers:
  github:
    command: [github-mcp-server, stdio]
    unlisted_tools: allow
    tools:
      get_file_contents: {effects: [reads_private]}
      search_issues: {effects: [reads_untrusted]}
```

## Use instead
Keep the default `unlisted_tools: deny`, run `mcpspec lock` to pin the tools
the server offers, and list each one you expose with its effects:
```yaml
version: 1
project: demo
servers:
  github:
    command: [github-mcp-server, stdio]
    tools:
      get_file_contents: {effects: [reads_private]}
      search_issues: {effects: [reads_untrusted]}
```

## References
- docs/lock.md: what `mcpspec lock` pins; docs/run.md: the tool allowlist of `mcpspec run`
- MCP specification, Server: Tools (`tools/list` is the server's own account of its tools)
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep; OWASP Top 10 for LLM Applications: LLM06 Excessive Agency
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import listing
from mcpspec.run.lockfile import LOCK_NAME

CHECKS = "`mcpspec lock` pins and checks the full tool list of a stdio server it starts"


def _left_out(plan: Plan, server: EffectiveSandbox) -> list[str]:
    """Tools the lock pins for ``server`` that its `tools:` does not list."""
    pinned = plan.lock.tools.get(server.name, frozenset()) if plan.lock is not None else frozenset()
    return sorted(_printable(name) for name in pinned - set(server.tools))


def _printable(name: str) -> str:
    """A tool name as the server chose it, with control characters escaped."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in name)


def check(plan: Plan) -> Iterator[Finding]:
    for server in plan.servers.values():
        if not server.tools:
            continue  # TS007's finding
        if not server.runs_here and server.transport.type == "http":
            yield Finding(
                path=(*server.path, "tools"),
                message=f"server '{server.name}' may offer tools its `tools:` does not list, and nothing checks a client that reaches it "
                f"directly: it is external; have clients reach it through `mcpspec run FILE {server.name}` (which hides unlisted tools) "
                f"and pin its tools with `mcpspec lock FILE {server.name}`",
            )
            continue
        if server.transport.type != "stdio":
            where = "it is external" if not server.runs_here else "it speaks HTTP"
            yield Finding(
                path=(*server.path, "tools"),
                message=f"server '{server.name}' may offer tools its `tools:` does not list, and nothing checks: {where}, so clients reach it "
                "directly and neither `mcpspec run` (which hides unlisted tools) nor `mcpspec lock` (which pins and checks the full tool list) "
                "sees its tools; restrict its clients to the listed tools",
            )
            continue
        if server.unlisted_tools == "allow":
            left = _left_out(plan, server)
            known = f"; {LOCK_NAME} pins {len(left)} tools it does not list: {listing(left)}" if left else ""
            yield Finding(
                path=server.origin("unlisted_tools"),
                message=f"server '{server.name}' lets tools its `tools:` does not list reach the model (unlisted_tools: allow), "
                f"with effects no rule sees{known} ({CHECKS}: list every tool with its effects and keep unlisted_tools: deny)",
            )


RULE = Rule(
    id="TS009",
    slug="tools-list-partial",
    severity="medium",
    summary="Tools a server's `tools:` does not list can reach the model, and nothing checks the list",
    check=check,
    doc=__doc__ or "",
)
