"""
## What it does
Flags a read-write mount on a server whose declared tools only read: none of
them has a writing effect (`writes_local`, `exec`, `deploy`, `destructive` or
`modify_access`). Servers without declared tools, and servers with a tool
whose effects are undeclared, are left alone: nothing says they only read.

## Why is this risky
Write access nobody needs is pure attack surface. A server that claims to
only read, yet can write, can be steered (or a compromised release can
decide) to plant files in the mounted tree: a git hook, a build script, a
`.env`, a client config. The mount, not the tool list, is what the sandbox
enforces, so it should say `ro`.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-server-filesystem, /project]
    mounts:
      - {from: ~/projects/app, to: /project, mode: rw}
    tools:
      read_file: {effects: [reads_private]}
      list_directory: {effects: [reads_private]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-server-filesystem, /project]
    mounts:
      - {from: ~/projects/app, to: /project, mode: ro}
    tools:
      read_file: {effects: [reads_private]}
      list_directory: {effects: [reads_private]}
```

## References
- MCP specification, Security Best Practices: least privilege for local servers
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep
- OWASP Top 10 for LLM Applications: LLM06 Excessive Agency
- CWE-732 Incorrect Permission Assignment for Critical Resource
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import executes_code, launched
from mcpspec.rules.filesystem._common import mode_path, spec_mount

WRITE_EFFECTS = frozenset({"writes_local", "exec", "deploy", "destructive", "modify_access"})


def only_reads(server: EffectiveSandbox) -> bool:
    """Every tool declares its effects and none of them writes."""
    if not server.tools or executes_code(server):
        return False
    return all(tool.effects and not WRITE_EFFECTS.intersection(tool.effects) for tool in server.tools.values())


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        if not only_reads(server):
            continue
        for mount in server.mounts:
            if not mount.writable:
                continue
            related: tuple[Related, ...] = ()
            if spec_mount(plan, mount).mode is None and mount.workspace_dir is not None:
                related = (Related(("workspace", "dirs", mount.workspace_dir, "mode"), "the dir is read-write for every server that mounts it"),)
            message = f"server {server.name!r} mounts {mount.target} read-write, but its tools only read"
            yield Finding(path=mode_path(plan, mount), message=message, related=related)


RULE = Rule(
    id="FS004",
    slug="writable-mount-read-only-tools",
    severity="medium",
    summary="A read-write mount on a server whose tools only read",
    check=check,
    doc=__doc__ or "",
)
