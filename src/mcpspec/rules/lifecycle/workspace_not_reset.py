"""
## What it does
Flags workspaces that outlive the work they were made for: `workspace.reset: never`, and
`lifecycle.teardown.remove_workspace: false` on a server that mounts a workspace directory
read-write (a tmpfs directory is emptied at teardown anyway, so it does not count).

## Why is this risky
What one task writes, the next one reads. A file a prompt injection planted (a poisoned
`requirements.txt`, a git hook, a note with instructions for the model), or private data a task
produced, then carries over into later tasks, and with a shared workspace into other users' tasks.
A workspace that is never removed also piles up on the host outside every sandbox's lifetime.

## Example
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  reset: never
  dirs:
    output: {mode: rw}
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    mounts:
      - {from: workspace.output, to: /workspace/output}
    lifecycle:
      teardown: {remove_workspace: false}
```

## Use instead
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  reset: per-task
  dirs:
    output: {mode: rw}
  artifacts: ["output/**"]
servers:
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    mounts:
      - {from: workspace.output, to: /workspace/output}
    lifecycle:
      teardown: {remove_workspace: true, copy_out: artifacts}
```

## References
- OWASP Top 10 for Agentic Applications: ASI06 Memory & Context Poisoning
- OWASP MCP Top 10: MCP10 Context Injection & Over-Sharing
- CWE-226: Sensitive Information in Resource Not Removed Before Reuse; CWE-459: Incomplete Cleanup
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, in_full, who


def check(plan: Plan) -> Iterator[Finding]:
    if plan.workspace is not None and plan.workspace.reset == "never":
        yield Finding(path=("workspace", "reset"), message="workspace.reset never carries files from one task (and one user) to the next")
    kept = [server for server in launched(plan) if not _removes_workspace(server) and _written(server)]
    for path, group in by_origin(kept, "lifecycle.teardown.remove_workspace").items():
        related = tuple(Related(mount.path, f"server '{server.name}' writes workspace.{mount.workspace_dir}") for server in group for mount in _written(server))
        yield Finding(path=path, message=f"teardown keeps the writable workspace of {who(group, in_full)} after the sandbox ends", related=related)


def _written(server: EffectiveSandbox) -> list[EffectiveMount]:
    """Workspace mounts the server may write that outlive teardown (tmpfs ones vanish with it)."""
    return [mount for mount in server.mounts if mount.workspace_dir is not None and mount.writable and not mount.tmpfs]


def _removes_workspace(server: EffectiveSandbox) -> bool:
    teardown = server.lifecycle.teardown
    return teardown.remove_workspace


RULE = Rule(
    id="LC003",
    slug="workspace-not-reset",
    severity="medium",
    summary="Workspace files outlive the task that wrote them",
    check=check,
    doc=__doc__ or "",
)
