"""
## What it does
Reported by `mcpspec build` when the spec sets a policy that the target does
not enforce, or enforces in part: idle timeouts, package-install rules,
command allow lists, workspace teardown, audit of tool calls, image pinning,
approvals, rate limits and call timeouts. The build writes its files.

## Why is this risky
These policies do not widen what a server can reach (the sandbox's boundary
still holds), but a reader of the spec may believe they are in force. The
finding and the build manifest say exactly which ones are not, so they can be
enforced elsewhere (an MCP gateway, an orchestrator) or accepted with a waiver.

## Example
```yaml
# target: systemd
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    lifecycle: {idle_timeout: 15m}
    tools:
      read: {effects: [reads_private]}
```

## Use instead
```yaml
# target: systemd
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    lifecycle: {idle_timeout: 15m}
    tools:
      read: {effects: [reads_private]}
waivers:
  - rule: TG003
    at: servers.notes
    reason: the agent runner stops idle sessions; the MCP gateway logs and limits calls
    expires: 2099-01-01
```

## References
- MCP specification, security best practices: human in the loop for tool calls.
- mcpspec `targets/<name>/README.md`: the capability matrix of each target.
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="TG003",
    slug="policy-not-enforced",
    severity="low",
    summary="The target does not enforce a policy the spec sets",
    check=None,
    doc=__doc__ or "",
)
