"""
## What it does
Reported by `mcpspec build` when the target enforces only part of a boundary
control the spec asks for, and says which part: for example podman-compose
ignores `memswap_limit`, so a compose service's memory limit lets it swap as
much again.
The build still writes its files (fail the build with `--fail-on medium`).

## Why is this risky
A partial limit behaves differently from what the spec's reader expects: a
memory limit the server can double by swapping, or a process limit the
cluster's nodes set rather than the spec. Knowing the difference is what lets
a reviewer decide whether the target is good enough for this server.

## Example
```yaml
# target: compose
version: 1
project: demo
servers:
  scan:
    command: [mcp-scan]
    runtime: {memory: 512Mi, pids: null, cpus: null}
    tools:
      scan: {effects: [reads_private]}
```

## Use instead
```yaml
# target: compose
version: 1
project: demo
servers:
  scan:
    command: [mcp-scan]
    runtime: {memory: 512Mi, pids: null, cpus: null}
    tools:
      scan: {effects: [reads_private]}
waivers:
  - rule: TG002
    at: servers.scan.runtime
    reason: docker compose runs it, which applies memswap_limit
    expires: 2099-01-01
```
Or build for the systemd or bwrap target, which hold memory, tasks and CPU
with a cgroup (systemd: MemoryMax=, MemorySwapMax=, TasksMax=, CPUQuota=; the
bwrap launcher: a cgroup of its own per launch).

## References
- docker-compose and podman-compose: mem_limit, memswap_limit.
- systemd.resource-control(5).
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="TG002",
    slug="boundary-partly-enforced",
    severity="medium",
    summary="The target enforces only part of a boundary the spec asks for",
    check=None,
    doc=__doc__ or "",
)
