"""
## What it does
Flags a writable workspace dir mount that can grow without bound: a tmpfs dir
with no `size`, or a scratch dir (named like `tmp`, `temp`, `scratch` or
`cache`) kept on disk instead of in a size-limited tmpfs.

## Why is this risky
Scratch space fills up: package caches, build trees, unpacked archives, a
runaway loop writing a log. An unlimited tmpfs takes host memory until the
kernel's OOM killer picks a victim; an on-disk scratch dir fills the disk
that holds every other run's workspace and the audit log. One injected
prompt or one bad task can take the host down for everyone. A tmpfs with a
size is bounded and is gone at teardown.

## Example
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    tmp: {mode: rw}
servers:
  builder:
    command: [mcp-builder]
    mounts:
      - {from: workspace.tmp, to: /tmp}
```

## Use instead
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    tmp: {mode: rw, tmpfs: true, size: 1Gi}
servers:
  builder:
    command: [mcp-builder]
    mounts:
      - {from: workspace.tmp, to: /tmp}
```

## References
- OWASP Top 10 for LLM Applications: LLM10 Unbounded Consumption
- CWE-400 Uncontrolled Resource Consumption, CWE-770 Allocation of Resources Without Limits or Throttling
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveMount, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import launched

_SCRATCH = re.compile(r"(^|[-_])(tmp|temp|scratch|cache)s?($|[-_])")


def _problem(mount: EffectiveMount) -> str | None:
    name = mount.workspace_dir
    if name is None or not mount.writable:
        return None
    if mount.tmpfs:
        return None if mount.size_set else f"tmpfs workspace dir {name!r} has no size limit and can fill host memory"
    if _SCRATCH.search(name):
        return f"scratch workspace dir {name!r} is on disk with no size limit"
    return None


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        for mount in server.mounts:
            problem = _problem(mount)
            if problem is None or mount.workspace_dir is None:
                continue
            related = (Related(("workspace", "dirs", mount.workspace_dir), "the dir's definition"),)
            yield Finding(path=(*mount.path, "from"), message=f"server {server.name!r} writes to {mount.target}: {problem}", related=related)


RULE = Rule(
    id="FS008",
    slug="unbounded-scratch",
    severity="low",
    summary="A writable scratch dir has no size limit",
    check=check,
    doc=__doc__ or "",
)
