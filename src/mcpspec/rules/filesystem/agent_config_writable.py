"""
## What it does
Flags a read-write mount that reaches an MCP client's or coding agent's
configuration: a user-level config directory (`~/.cursor`, `~/.claude`,
`~/.claude.json`, `~/.codex`, `~/.gemini`, `~/.config/Code/User`, ...), a
directory that holds one (`~`), or any path with a project-level config
component (`.mcp.json`, `.cursor`, `.claude`, `.vscode`, `.codex`,
`.gemini`, `.windsurf`).

## Why is this risky
Client configs say which MCP servers start and which tools run without
asking. A server that can write them can add its own server or an
auto-approve setting, and the next time the client starts, that command runs
on the host, outside every sandbox: persistence and code execution from one
file write (TrustFall; Claude Code CVE-2025-59536; Cursor MCPoison
CVE-2025-54136). These files also hold OAuth tokens and API keys.

## Example
```yaml
version: 1
project: demo
servers:
  editor:
    command: [mcp-editor]
    mounts:
      - {from: ~/projects/app/.vscode, to: /project/.vscode, mode: rw}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  editor:
    command: [mcp-editor]
    mounts:
      - {from: ~/projects/app/src, to: /project/src, mode: rw}
      - {from: ~/projects/app/.vscode, to: /project/.vscode, mode: ro}
```

## References
- MCP specification, Security Best Practices: "Local MCP Server Compromise"
- OWASP MCP Top 10: MCP03 Tool Poisoning, MCP09 Shadow MCP Servers
- CVE-2025-59536 (Claude Code project servers started before trust), CVE-2025-54136 (Cursor MCPoison), CVE-2025-54135 (Cursor CurXecute)
- CWE-94 Improper Control of Generation of Code, CWE-732 Incorrect Permission Assignment for Critical Resource
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import AGENT_CONFIG_NAMES, AGENT_CONFIG_PATHS, components, overlapping
from mcpspec.rules.filesystem._common import launched_host_mounts, mode_path
from mcpspec.rules.grouping import listing


def check(plan: Plan) -> Iterator[Finding]:
    for server, mount in launched_host_mounts(plan):
        if not mount.writable:
            continue
        inside = any(part in AGENT_CONFIG_NAMES for part in components(mount.location))
        found = overlapping(mount.location, AGENT_CONFIG_PATHS)
        if inside or any(within for _, within in found):
            message = f"server {server.name!r} can write {mount.location}, an MCP client's configuration"
        elif found:
            message = f"server {server.name!r} can write {mount.location}, which holds client configs {listing([pattern for pattern, _ in found])}"
        else:
            continue
        yield Finding(path=mode_path(plan, mount), message=message)


RULE = Rule(
    id="FS005",
    slug="agent-config-writable",
    severity="high",
    summary="An MCP client or agent configuration is writable from a sandbox",
    check=check,
    doc=__doc__ or "",
)
