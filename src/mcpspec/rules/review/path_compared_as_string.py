"""
## What it does
Flags an argument test in a tool's `when` that compares what looks like a
file path (an `equals`, `prefix` or `regex` starting with `/`) as a plain
string, without `path: true` or a `glob`.

## Why is this risky
As a string, `/workspace/output/../../etc/passwd` starts with
`/workspace/output`, `/workspace/output-old/x` does too, and
`/workspace//output/x` does not: a string prefix lets a call climb out of the
area it allows, and a string test on a refused area is walked around by
`/./etc/passwd`. Path tests normalise first (`.`, `//`, trailing slashes,
percent-escapes, backslashes, NFKC forms such as the fullwidth solidus),
compare whole segments, and never let a `..` through.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-server-files]
    tools:
      write_file:
        effects: [writes_local]
        when:
          - {if: {arg: path, prefix: /workspace/output}, then: allow}
```

## Use instead
```yaml
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
- CWE-22: Improper Limitation of a Pathname to a Restricted Directory ('Path Traversal')
- CWE-41: Improper Resolution of Path Equivalence
- docs/run.md, Argument conditions
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.review._conditions import argument_tests


def check(plan: Plan) -> Iterator[Finding]:
    for _server, name, _rule, test, path in argument_tests(plan):
        kind = test.kind
        value = getattr(test, kind)
        if test.is_path or kind not in ("equals", "prefix", "regex") or not isinstance(value, str):
            continue
        if value.startswith("/") or (kind == "regex" and value.startswith("^/")):
            instead = "glob" if kind == "regex" else "path: true (or a glob)"
            yield Finding(
                path=(*path, kind),
                message=f"'{name}': argument '{test.arg}' is compared with {value!r} as a string, so '..', '//' and look-alike spellings "
                f"pass it or walk around it; use {instead}",
            )


RULE = Rule(
    id="HR007",
    slug="path-compared-as-string",
    severity="high",
    summary="A path argument is compared as a plain string in an argument condition",
    check=check,
    doc=__doc__ or "",
)
