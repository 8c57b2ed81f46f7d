"""
## What it does
Flags a server that runs on this machine and lists tools when no
`mcp-sandbox.lock` beside the spec pins that server's tools: the lock is
missing, cannot be read, or was written before the server was added.

## Why is this risky
A server describes its tools to the model at run time, and it can change
those descriptions after they were reviewed: a "rug pull" rewrites a harmless
tool's description into instructions for the model, or adds a tool nobody
approved. `mcpspec lock` records each tool's name, description and schema
digests in `mcp-sandbox.lock`, which is reviewed like any lockfile, and
`mcpspec run` refuses every tool that is new or differs from its pin. Without
a pin there is nothing to compare with: a change after review goes unnoticed,
and `mcpspec run` treats every tool of the server as new.

## Example
```yaml
# no mcp-sandbox.lock next to this file
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    tools:
      list_notes: {effects: [reads_private]}
```

## Use instead
Run `mcpspec lock mcp-sandbox.yaml`, review the `mcp-sandbox.lock` it writes
and commit it beside the spec; run `mcpspec lock --check` in CI.
```yaml
# mcp-sandbox.lock beside this file pins notes
version: 1
project: demo
servers:
  notes:
    command: [mcp-notes]
    tools:
      list_notes: {effects: [reads_private]}
```

## References
- docs/lock.md: what the lock pins and how it is reviewed
- OWASP MCP Top 10: MCP03 Tool Poisoning (rug pulls, schema poisoning)
- MCP specification, Server: Tools (`notifications/tools/list_changed`: a server may change its tools at any time)
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.run.lockfile import LOCK_NAME, lockable


def check(plan: Plan) -> Iterator[Finding]:
    lock = plan.lock
    if lock is None:  # not read from a file: there is no place a lock could be
        return
    for server in plan.servers.values():
        if not lockable(server) or (lock.pinned is not None and server.name in lock.pinned):
            continue
        if lock.error is not None:
            why = f"{LOCK_NAME} beside the spec cannot be read ({lock.error})"
        elif lock.pinned is None:
            why = f"there is no {LOCK_NAME} beside the spec"
        else:
            why = f"{LOCK_NAME} does not pin it"
        yield Finding(
            path=(*server.path, "tools"),
            message=f"server '{server.name}' lists tools but {why}, so a change to them after review goes unnoticed (run `mcpspec lock`)",
        )


RULE = Rule(
    id="TS008",
    slug="tools-not-pinned",
    severity="medium",
    summary="A server's tools are not pinned in mcp-sandbox.lock, so a changed tool (a rug pull) goes unnoticed",
    check=check,
    doc=__doc__ or "",
)
