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

import functools
from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.filesystem._common import spec_mount

WRITE_EFFECTS = frozenset({"writes_local", "exec", "deploy", "destructive", "modify_access"})


def only_reads(server: EffectiveSandbox) -> bool:
    """Every tool declares its effects and none of them writes.

    A tool that executes code declares ``exec``, one of WRITE_EFFECTS: of what makes a
    server execute code (:func:`~mcpspec.rules.facts.executes_code`), only its kind is left to ask.
    """
    if not server.tools or server.kind == "code-exec":
        return False
    return all(tool.effects and WRITE_EFFECTS.isdisjoint(tool.effects) for tool in server.tools.values())


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        if only_reads(server):
            for mount in server.mounts:
                if mount.writable:
                    yield _finding(plan, server, mount)


def _finding(plan: Plan, server: EffectiveSandbox, mount: EffectiveMount) -> Finding:
    mode_written = spec_mount(plan, mount).mode is not None
    dir_name = mount.workspace_dir
    related = _dir_mode(dir_name) if dir_name is not None and not mode_written else ()
    message = f"server {server.name!r} mounts {mount.target} read-write, but its tools only read"
    return Finding(path=(*mount.path, "mode" if mode_written else "from"), message=message, related=related)


@functools.lru_cache(maxsize=256)
def _dir_mode(dir_name: str) -> tuple[Related, ...]:
    """Where a workspace dir's mode is written (not the mount's own: see ``mode_path``)."""
    return (Related(("workspace", "dirs", dir_name, "mode"), "the dir is read-write for every server that mounts it"),)


RULE = Rule(
    id="FS004",
    slug="writable-mount-read-only-tools",
    severity="medium",
    summary="A read-write mount on a server whose tools only read",
    check=check,
    doc=__doc__ or "",
)
