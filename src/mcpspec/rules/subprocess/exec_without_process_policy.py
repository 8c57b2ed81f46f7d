"""
## What it does
Flags a launched server that executes code (a tool with the `exec` effect, or `kind: code-exec`)
while `process.allow` is unset, so nothing lists the programs it may spawn. An empty list
(`allow: []`) is a policy: it means nothing may be spawned.

## Why is this risky
A code-executing tool runs what the model asks for, and a prompt injection decides what the model
asks for. Without a process allowlist the sandbox lets that code start any binary the image holds:
`curl` or `nc` to carry data out, `ssh` and `git` with whatever credentials are mounted, compilers,
package managers and interpreters that fetch more code. A short `allow` list (plus `deny` for the
worst) turns "anything" into the few tools the server needs.

## Example
```yaml
version: 1
project: demo
servers:
  runner:
    kind: code-exec
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    tools:
      run_tests: {description: Run the test suite., effects: [exec]}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  runner:
    kind: code-exec
    image: ghcr.io/acme/mcp-runner@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [acme-runner-mcp]
    process:
      allow: [python, pytest]
      deny: [curl, wget, ssh, nc]
    tools:
      run_tests: {description: Run the test suite., effects: [exec]}
```

## References
- OWASP MCP Top 10: MCP05 Command Injection & Execution
- OWASP Top 10 for Agentic Applications: ASI05 Unexpected Code Execution
- OWASP Top 10 for LLM Applications: LLM06 Excessive Agency
- CWE-78: Improper Neutralization of Special Elements used in an OS Command; CWE-250: Execution with Unnecessary Privileges
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import executes_code, launched, tool_path, tools_with
from mcpspec.rules.grouping import by_origin, in_full, who


def check(plan: Plan) -> Iterator[Finding]:
    unpoliced = [server for server in launched(plan) if server.process.allow is None and executes_code(server)]
    for path, group in by_origin(unpoliced, "process.allow").items():
        related = tuple(item for server in group for item in _why_exec(server))
        yield Finding(path=path, message=f"{who(group, in_full)} {_runs(group)} code with no process.allow list of what it may spawn", related=related)


def _runs(group: list[EffectiveSandbox]) -> str:
    return "runs" if len(group) == 1 else "run"


def _why_exec(server: EffectiveSandbox) -> list[Related]:
    """The tools (or the kind) that make the server a code executor."""
    tools = tools_with(server, "exec")
    if tools:
        return [Related((*tool_path(server, name), "effects"), f"tool '{name}' executes code") for name in tools]
    return [Related((*server.path, "kind"), f"server '{server.name}' is a code-exec server")]


RULE = Rule(
    id="SP005",
    slug="exec-without-process-policy",
    severity="high",
    summary="A code-executing server has no list of programs it may spawn",
    check=check,
    doc=__doc__ or "",
)
