"""
## What it does
Flags launch commands that go through a shell: a `command` written as one string (which a shell
runs), an argv whose program is a shell (`sh`, `bash`, `zsh`, `dash`, `cmd`, `powershell`, `pwsh`)
given a script with `-c` (or `/c`, `-Command`), also behind `env` and `VAR=value` or run by
another program (`sudo -u app sh -c ...`, `timeout 60 bash -c ...`). The message
names the shell syntax the script holds (`&&`, `||`, `;` or `|` between words, backticks, `$(`).

Shell syntax in an argument no shell reads is not flagged: in
`[/usr/bin/python3, -c, "import os; print(os.getcwd())"]` the `;` is Python's, and in
`[node, cli.js, "--origins=a;b"]` it is part of one option value. Only `sh -c` (`bash -c`,
`/bin/sh -lc`, `cmd /c`, `pwsh -Command`, `env ... sh -c`) and a string `command` hand text to a shell.

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
from mcpspec.rules.subprocess._common import SHELLS, program_index, program_name, shell_script_index

# Shell syntax in a script a shell runs. ';' and '|' count only next to a space (or alone), so a
# script word such as '--allowed-origins=https://a;https://b' or a regex 'a|b' does not.
_SHELL_SYNTAX = re.compile(r"&&|\|\||\$\(|`|;\s|;$|\s\||\|\s|^\|$")


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        if server.command_is_shell:
            yield Finding(
                path=(*server.path, "command"),
                message=f"server '{server.name}' gives its command as one string, which a shell runs{_syntax(server.command[-1])}",
            )
        elif server.command:
            yield from _argv_findings(server)


def _argv_findings(server: EffectiveSandbox) -> Iterator[Finding]:
    """Only the script a shell is given (``sh -c SCRIPT``) is shell code; other arguments are literal."""
    argv = server.command
    flag = shell_script_index(argv)
    start = program_index(argv)
    if flag is None:
        # A shell run by another program: `sudo -u app sh -c ...`, `timeout 60 bash -c ...`.
        start = _inner_shell(argv)
        if start is None:
            return
        flag = start + (shell_script_index(argv[start:]) or 0)
    script = flag + 1 if flag + 1 < len(argv) else flag
    shell = " ".join(argv[start : flag + 1]) if start is not None else argv[flag]
    syntax = _syntax(argv[script]) if script != flag else ""
    yield Finding(path=(*server.path, "command", script), message=f"server '{server.name}' runs a shell script through '{shell}'{syntax}")


def _inner_shell(argv: tuple[str, ...]) -> int | None:
    """Index of a later word that runs a shell on a script, if any (most commands name no shell at all)."""
    if SHELLS.isdisjoint(map(program_name, argv[1:])):
        return None
    return next((index for index in range(1, len(argv)) if program_name(argv[index]) in SHELLS and shell_script_index(argv[index:]) is not None), None)


def _syntax(script: str) -> str:
    """`` with shell syntax ';'`` for the first shell operator of ``script``, else ''."""
    match = _SHELL_SYNTAX.search(script)
    if match is None:
        return ""
    return f" with shell syntax '{match.group().strip() or match.group()}'"


RULE = Rule(
    id="SP003",
    slug="shell-string-command",
    severity="high",
    summary="A launch command goes through a shell",
    check=check,
    doc=__doc__ or "",
)
