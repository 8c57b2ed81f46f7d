"""
## What it does
Flags launch commands that go through a shell: a `command` written as one string (which a shell
runs), an argv whose program is a shell (`sh`, `bash`, `zsh`, `dash`, `cmd`, `powershell`, `pwsh`)
given a script with `-c` (or `/c`, `-Command`), and arguments that hold shell syntax (`&&`, `||`,
`;` or `|` between words, backticks, `$(`).

## Why is this risky
A shell turns one launch into any number of commands: `a && curl ... | sh` downloads and runs code
that no review of the spec sees, and variables or substitutions expand at run time into whatever the
environment holds. Malicious startup commands in shared client configs hide exactly this way. An
argv names one program with literal arguments, so the policy that reviews it (and `process.allow`)
sees what really runs.

## Example
```yaml
version: 1
project: demo
servers:
  build:
    image: ghcr.io/acme/builder@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [bash, -c, "pip install -r /work/requirements.txt; python /work/build_mcp.py"]
```

## Use instead
```yaml
version: 1
project: demo
servers:
  build:
    image: ghcr.io/acme/builder@sha256:3752b5e14113fff2c4e19e3f4ca28447699cf1861f8d3011ae5df7f08be37bba
    command: [python, /work/build_mcp.py]
```

## References
- OWASP MCP Top 10: MCP05 Command Injection & Execution
- MCP specification, Security Best Practices: local server compromise via malicious startup commands
- CWE-78: Improper Neutralization of Special Elements used in an OS Command
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.subprocess._common import program_index, shell_script_index

# Shell syntax in a plain argument. ';' and '|' count only next to a space (or alone), so option
# values such as '--allowed-origins=https://a;https://b' or a regex 'a|b' do not.
_SHELL_SYNTAX = re.compile(r"&&|\|\||\$\(|`|;\s|;$|\s\||\|\s|^\|$")


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        if server.command_is_shell:
            yield Finding(path=(*server.path, "command"), message=f"server '{server.name}' gives its command as one string, which a shell runs")
        elif server.command:
            yield from _argv_findings(server)


def _argv_findings(server: EffectiveSandbox) -> Iterator[Finding]:
    argv = server.command
    flag = shell_script_index(argv)
    script = None
    if flag is not None:
        start = program_index(argv)
        script = flag + 1 if flag + 1 < len(argv) else flag
        shell = " ".join(argv[start : flag + 1]) if start is not None else argv[flag]
        yield Finding(path=(*server.path, "command", script), message=f"server '{server.name}' runs a shell script through '{shell}'")
    for index, arg in enumerate(argv):
        match = _SHELL_SYNTAX.search(arg)
        if index != script and match is not None:
            syntax = match.group().strip() or match.group()
            yield Finding(path=(*server.path, "command", index), message=f"server '{server.name}' has shell syntax '{syntax}' in a command argument, which only a shell would act on")


RULE = Rule(
    id="SP003",
    slug="shell-string-command",
    severity="high",
    summary="A launch command goes through a shell",
    check=check,
    doc=__doc__ or "",
)
