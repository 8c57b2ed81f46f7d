"""
## What it does
Flags a host mount of a whole system or home tree: `/`, `~`, `/home`, `/root`,
`/Users`, one user's home (`/home/alice`), `/etc`, `/proc`, `/sys`, `/dev`,
`/boot`, `/var` or `/usr`; a mount of the workspace root or any directory
above it, which holds every agent's runs; and a host mount of a directory
inside the workspace root, where the launcher creates the runs' directories.

## Why is this risky
A server needs one project directory, not the machine. A mount this wide
hands it every credential, browser profile, client config and private file
below it, and, when writable, the means to plant code that runs later (shell
profiles, git hooks, cron, systemd units). Mounting the workspace root or its
parent lets one run read and rewrite every other agent's and run's files,
which defeats per-run workspaces. Writable, it is worse: the launcher creates
each new run's directories there, as root, and hands them to the sandbox
user; a server that plants a symbolic link or races that step gets a
root-owned file of its choosing handed over to it. Give each server only its
workspace dirs (`from: workspace.<dir>`), never the tree that holds them.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-server-filesystem, /home-dir]
    mounts:
      - {from: "~", to: /home-dir, mode: rw}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-server-filesystem, /project]
    mounts:
      - {from: ~/projects/app, to: /project, mode: rw}
```

## References
- MCP specification, Security Best Practices: "Local MCP Server Compromise"; client/roots (expose only the directories a task needs)
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep, MCP10 Context Injection & Over-Sharing
- OWASP Top 10 for LLM Applications: LLM06 Excessive Agency
- CWE-552 Files or Directories Accessible to External Parties
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveMount, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import components, contains
from mcpspec.rules.filesystem._common import launched_host_mounts

_BROAD = {
    "/": "the host's whole filesystem",
    "~": "the whole home directory",
    "/home": "every user's home directory",
    "/Users": "every user's home directory",
    "/root": "root's home directory",
    "/etc": "the host's configuration",
    "/proc": "every host process's memory maps, environment and command line",
    "/sys": "the host's kernel and device settings",
    "/dev": "the host's devices",
    "/boot": "the host's kernel and boot loader",
    "/var": "the host's logs, caches, spools and service state",
    "/usr": "the host's programs and libraries",
}


def _broad(source: str) -> str | None:
    """What a too-wide mount exposes, or None."""
    if source in _BROAD:
        return _BROAD[source]
    parts = components(source)
    if len(parts) == 3 and "/" + parts[1] in ("/home", "/Users"):
        return "a whole home directory"
    return None


def _writable(mount: EffectiveMount) -> str:
    return " read-write" if mount.writable else ""


def check(plan: Plan) -> Iterator[Finding]:
    root = plan.workspace.root if plan.workspace is not None else None
    for server, mount in launched_host_mounts(plan):
        exposes = _broad(mount.location)
        if exposes is not None:
            message = f"server {server.name!r} mounts {mount.location}{_writable(mount)}: {exposes}"
            yield Finding(path=(*mount.path, "from"), message=message)
        elif root is not None and (contains(mount.location, root) or contains(root, mount.location)):
            if contains(mount.location, root):
                where = "the workspace root" if mount.location == root else f"above the workspace root {root}"
                holds = "which holds every agent's runs"
            else:
                where, holds = f"inside the workspace root {root}", "where the launcher creates run directories"
            message = f"server {server.name!r} mounts {mount.location}{_writable(mount)}, {where}, {holds}"
            yield Finding(path=(*mount.path, "from"), message=message, related=(Related(("workspace", "root"), "the workspace root"),))


RULE = Rule(
    id="FS003",
    slug="overbroad-mount",
    severity="high",
    summary="A whole system tree, home directory, or the workspace root (or a directory above or inside it) is mounted",
    check=check,
    doc=__doc__ or "",
)
