"""
## What it does
Flags a server mcpspec launches whose `runtime.memory`, `runtime.pids` or `runtime.cpus` is `null`,
which means unlimited (left out, each has a safe built-in default). Each unlimited field is one
finding, at the line that set it, in `defaults` when that is where it came from.

## Why is this risky
A model in a loop, a fork bomb in a build script or injected code mining coins can take every byte,
process slot and core of the host, starving the other sandboxes and the agent itself: a denial of
service from a single tool call. Limits turn that into one failed call.

## Example
```yaml
version: 1
project: demo
defaults:
  runtime: {memory: null, pids: null}
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
```

## Use instead
```yaml
version: 1
project: demo
defaults:
  runtime: {memory: 512Mi, pids: 128, cpus: 1.0}
servers:
  runner:
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
```

## References
- OWASP Top 10 for LLM Applications: LLM10 Unbounded Consumption
- MCP specification, Security Best Practices: implement timeouts and resource limits
- CWE-770: Allocation of Resources Without Limits or Throttling; CWE-400: Uncontrolled Resource Consumption
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, in_full, who

_WHAT = {"memory": "memory", "pids": "processes", "cpus": "CPU"}


def check(plan: Plan) -> Iterator[Finding]:
    servers = list(launched(plan))
    for field, what in _WHAT.items():
        unlimited = [server for server in servers if getattr(server.resources, field) is None]
        for path, group in by_origin(unlimited, f"runtime.{field}").items():
            yield Finding(path=path, message=f"runtime.{field} null puts no limit on the {what} of {who(group, in_full)}")


RULE = Rule(
    id="LC005",
    slug="unlimited-resources",
    severity="medium",
    summary="A sandbox has no memory, process or CPU limit",
    check=check,
    doc=__doc__ or "",
)
