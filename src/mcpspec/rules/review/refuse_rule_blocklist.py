"""
## What it does
Flags a `then: refuse` rule in a tool's `when` (or a `then: approve` rule
when `otherwise: allow`) that catches calls by a string pattern (`prefix`,
`regex` or a string `equals`, not a path test) while the calls no rule
catches are not refused (`otherwise` is not `refuse`).

## Why is this risky
Such a rule is a blocklist: it names the bad values and lets everything
else through, and the bad values have more spellings than a pattern can
list. `prefix: rm` refuses `rm -rf /` but not `/bin/rm -rf /`, `\\rm`,
`command rm`, `$(printf rm) -rf /`, `find / -delete` or `ls; rm -rf /`.
`mcpspec run` reads a string argument every way it can tell a server will
(as written, NFKC-folded, trimmed of surrounding whitespace, with shell
quotes and backslashes removed, without invisible format characters; a
NUL makes the value unjudgeable) and a refuse rule fires if any reading
matches, but what a command, a query or a template language makes of a
string has no end of other spellings.

## Example
```yaml
version: 1
project: demo
servers:
  shell:
    command: [mcp-server-shell]
    tools:
      run_command:
        effects: [exec]
        when:
          - {if: {arg: command, prefix: rm}, then: refuse}
        otherwise: allow
```

## Use instead
```yaml
version: 1
project: demo
servers:
  shell:
    command: [mcp-server-shell]
    tools:
      run_command:
        effects: [exec]
        when:
          - if: {any: [{arg: command, equals: git status}, {arg: command, equals: git diff}]}
            then: allow
        otherwise: refuse
```

## References
- docs/run.md, Argument conditions: "A refuse rule is a blocklist"
- CWE-184: Incomplete List of Disallowed Inputs
- OWASP Top 10 for Agentic Applications 2026: ASI02 Tool Misuse and Exploitation
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import tool_path, tools
from mcpspec.rules.review._conditions import walk

PASSED = {"allow": "run unasked", "approve": "go to the approver", None: "get the tool's usual approval"}


def check(plan: Plan) -> Iterator[Finding]:
    for server, name, tool in tools(plan):
        for index, rule in enumerate(tool.when):
            if not (rule.then == "refuse" and tool.otherwise != "refuse") and not (rule.then == "approve" and tool.otherwise == "allow"):
                continue
            for test, path, negated in walk(rule.if_, (*tool_path(server, name), "when", index, "if")):
                value = getattr(test, test.kind)
                # Under an odd number of `not`s a test names what passes (an allowlist); paths are judged apart (HR007).
                if negated or test.is_path or test.kind not in ("prefix", "regex", "equals") or not isinstance(value, str):
                    continue
                yield Finding(
                    path=(*path, test.kind),
                    message=f"'{name}': this {rule.then} rule is a blocklist: argument '{test.arg}' is caught only by its {test.kind} "
                    f"{value!r}, and other spellings of the same value {PASSED[tool.otherwise]}; allow an exact set instead "
                    "(then: allow with equals, or a regex of the allowed values only) and set otherwise: refuse",
                )


RULE = Rule(
    id="HR008",
    slug="refuse-rule-blocklist",
    severity="medium",
    summary="A refuse rule catches calls by a string pattern while everything else passes: a blocklist",
    check=check,
    doc=__doc__ or "",
)
