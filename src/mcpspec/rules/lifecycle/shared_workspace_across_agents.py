"""
## What it does
Flags `workspace.per_agent: false` when the file defines two or more agents: every agent's servers
then work in one shared workspace tree.

## Why is this risky
Agents are separate model contexts so that what one reads cannot steer what another does. A shared
workspace undoes that: an agent that reads untrusted content can write a file that another agent,
with more privileges, later reads or runs, and each agent sees the other's private outputs.
`per_agent: true` gives each agent its own `{root}/{agent}/{run_id}` tree.

## Example
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  per_agent: false
  dirs:
    output: {mode: rw}
agents:
  researcher: {servers: [fetch]}
  coder: {servers: [repo]}
servers:
  fetch:
    image: ghcr.io/acme/mcp-fetch@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-fetch-mcp]
    mounts:
      - {from: workspace.output, to: /workspace/output}
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    mounts:
      - {from: workspace.output, to: /workspace/output}
```

## Use instead
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  per_agent: true
  dirs:
    output: {mode: rw}
agents:
  researcher: {servers: [fetch]}
  coder: {servers: [repo]}
servers:
  fetch:
    image: ghcr.io/acme/mcp-fetch@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-fetch-mcp]
    mounts:
      - {from: workspace.output, to: /workspace/output}
  repo:
    image: ghcr.io/acme/mcp-repo@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-repo-mcp]
    mounts:
      - {from: workspace.output, to: /workspace/output}
```

## References
- OWASP Top 10 for Agentic Applications: ASI06 Memory & Context Poisoning; ASI07 Insecure Inter-Agent Communication
- OWASP MCP Top 10: MCP10 Context Injection & Over-Sharing
- CWE-668: Exposure of Resource to Wrong Sphere
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import in_full, quoted


def check(plan: Plan) -> Iterator[Finding]:
    if plan.workspace is None or plan.workspace.per_agent or len(plan.agents) < 2:
        return
    names = in_full(quoted(plan.agents))
    related = tuple(Related(("agents", name), f"agent '{name}' shares the workspace") for name in plan.agents)
    yield Finding(path=("workspace", "per_agent"), message=f"workspace.per_agent false gives agents {names} one shared workspace", related=related)


RULE = Rule(
    id="LC004",
    slug="shared-workspace-across-agents",
    severity="medium",
    summary="Several agents share one workspace",
    check=check,
    doc=__doc__ or "",
)
