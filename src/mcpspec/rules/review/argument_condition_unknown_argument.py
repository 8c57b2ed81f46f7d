"""
## What it does
Flags an argument test in a tool's `when` on an argument the tool's pinned
input schema (in `mcp-sandbox.lock`) does not list, where that schema lists
its arguments and allows no others.

## Why is this risky
The server never takes such an argument, so a client never needs to send it.
A condition on it is judged on a missing value, which fails closed: an `allow`
rule never fires (every call goes to the approver) and an `approve` or
`refuse` rule fires on every call. Either way the check the author meant
(usually on a misspelt name: `filepath` for `path`) is not made.

## Example
```yaml
# mcp-sandbox.lock beside this file pins files; write_file takes path, content
version: 1
project: demo
servers:
  files:
    command: [mcp-server-files]
    tools:
      write_file:
        effects: [writes_local]
        when:
          - {if: {arg: filepath, glob: /workspace/output/**}, then: allow}
```

## Use instead
```yaml
# mcp-sandbox.lock beside this file pins files; write_file takes path, content
version: 1
project: demo
servers:
  files:
    command: [mcp-server-files]
    tools:
      write_file:
        effects: [writes_local]
        when:
          - {if: {arg: path, glob: /workspace/output/**}, then: allow}
```

## References
- docs/run.md, Argument conditions: a missing argument is never allowed and always caught
- CWE-697: Incorrect Comparison
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.grouping import commas, quoted
from mcpspec.rules.review._conditions import argument_tests

LISTED = 6


def check(plan: Plan) -> Iterator[Finding]:
    if plan.lock is None:
        return
    for server, name, rule, test, path in argument_tests(plan):
        known = plan.lock.arguments.get(server.name, {}).get(name)
        if known is None or test.arg in known:
            continue
        effect = "the rule never allows a call" if rule.then == "allow" else f"the rule {rule.then}s every call"
        yield Finding(
            path=(*path, "arg"),
            message=f"'{name}' takes no argument '{test.arg}' (its pinned schema lists {commas(quoted(sorted(known)), LISTED)}): {effect}",
        )


RULE = Rule(
    id="HR006",
    slug="argument-condition-unknown-argument",
    severity="medium",
    summary="An argument condition tests an argument the tool's pinned schema does not have",
    check=check,
    doc=__doc__ or "",
)
