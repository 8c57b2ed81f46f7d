"""
## What it does
Reported by `mcpspec build` when the target enforces only part of a boundary
control the spec asks for, and says which part: for example bubblewrap's
memory limit is an address-space limit, not a limit on resident memory.
The build still writes its files (fail the build with `--fail-on medium`).

## Why is this risky
A partial limit behaves differently from what the spec's reader expects: a
process limit shared with other sandboxes of the same uid, or a CPU budget
instead of a CPU rate. Knowing the difference is what lets a reviewer decide
whether the target is good enough for this server.

## Example
```yaml
# target: bwrap
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
# target: bwrap
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
    reason: an address-space limit is enough for this scanner
    expires: 2099-01-01
```
Or build for the systemd target, which enforces memory, tasks and CPU with
cgroups (MemoryMax=, TasksMax=, CPUQuota=).

## References
- setrlimit(2): RLIMIT_AS, RLIMIT_NPROC, RLIMIT_CPU.
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
