"""
## What it does
Flags servers that run with root power: a launch command whose program is `sudo`, `doas`, `su`,
`pkexec` or `runas` (also inside a shell script the command runs), and `runtime.user: 0`, which makes
the server's process root inside its sandbox.

## Why is this risky
An MCP server runs code chosen in part by the model, and so by whoever injects the model. As root it
can read every file the sandbox can see, change the sandbox's own configuration, load what it likes
and use every kernel interface a root process is allowed: a single container escape or writable host
mount then becomes host root. `sudo` at launch is worse still: it reaches outside the sandbox's
identity altogether, usually with the invoking user's environment (`sudo -E`).

## Example
```yaml
version: 1
project: demo
defaults:
  runtime: {user: 0}
servers:
  shell:
    image: ghcr.io/acme/mcp-shell@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [sudo, -E, /usr/local/bin/mcp-shell]
```

## Use instead
```yaml
version: 1
project: demo
defaults:
  runtime: {user: 65532}
servers:
  shell:
    image: ghcr.io/acme/mcp-shell@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [/usr/local/bin/mcp-shell]
```

## References
- MCP specification, Security Best Practices: local server compromise (startup commands run with the client's privileges; `sudo` as a warning sign)
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep; MCP05 Command Injection & Execution
- CWE-250: Execution with Unnecessary Privileges; CWE-269: Improper Privilege Management
- Kubernetes Pod Security Standards (restricted): runAsNonRoot
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, in_full, who
from mcpspec.rules.subprocess._common import ESCALATORS, program_name, server_segments


def check(plan: Plan) -> Iterator[Finding]:
    servers = list(launched(plan))
    for server in servers:
        yield from _command_findings(plan, server)
    root = [server for server in servers if server.identity.uid == 0]
    for path, group in by_origin(root, "runtime.user").items():
        yield Finding(path=path, message=f"runtime.user 0 runs {who(group, in_full)} as root inside the sandbox")


def _command_findings(plan: Plan, server: EffectiveSandbox) -> Iterator[Finding]:
    reported: set[SpecPath] = set()
    for segment in server_segments(plan, server):
        start = segment.start
        if start is None or program_name(segment.words[start]) not in ESCALATORS:
            continue
        path = segment.path(start)
        if path in reported:
            continue
        reported.add(path)
        program = program_name(segment.words[start])
        where = "in its shell command" if segment.in_script else "as its launch program"
        yield Finding(path=path, message=f"server '{server.name}' runs '{program}' {where}")


RULE = Rule(
    id="SP004",
    slug="privilege-escalation",
    severity="critical",
    summary="A server is launched through sudo or runs as root",
    check=check,
    doc=__doc__ or "",
)
