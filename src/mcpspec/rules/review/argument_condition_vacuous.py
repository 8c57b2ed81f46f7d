"""
## What it does
Flags an argument test in a tool's `when` that can never hold (a regular
expression no string matches, a range whose `min` is above its `max`, a path
glob or prefix that names a place under none of the server's mounts and
outside the system directories a sandbox has anyway, such as a misspelt
`/workspace/ouptut/**`) or that holds for every value
(`glob: /**`, `prefix: ""`, `regex: .*`).

## Why is this risky
An argument rule is a security decision written as a pattern: "writes under
/workspace/output run, everything else is asked". A test that never holds
silently turns an `allow` rule off (every call goes to the approver, who
learns to click yes) or a `refuse` rule off (nothing is refused). A test that
always holds makes the rule decide every call, so the condition the author
meant to check is not checked at all: `then: allow` on `.*` is no approval.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-server-files]
    mounts:
      - {from: /srv/out, to: /workspace/output}
    tools:
      write_file:
        effects: [writes_local]
        when:
          - {if: {arg: path, glob: /workspace/ouptut/**}, then: allow}
        otherwise: approve
```

## Use instead
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-server-files]
    mounts:
      - {from: /srv/out, to: /workspace/output}
    tools:
      write_file:
        effects: [writes_local]
        when:
          - {if: {arg: path, glob: /workspace/output/**}, then: allow}
        otherwise: approve
```

## References
- docs/run.md, Argument conditions: the matcher language and what it does with values it cannot judge
- CWE-697: Incorrect Comparison
- OWASP Top 10 for Agentic Applications 2026: ASI02 Tool Misuse and Exploitation
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.conditions.glob import Glob
from mcpspec.conditions.saferegex import SafeRegex
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.review._conditions import argument_tests
from mcpspec.spec.conditions import ArgTest

# Values a regex that holds for everything matches; one that matches them all is taken to match anything.
PROBES = ("", "a", "Z9", "/etc/passwd", " x-_.~", "\u00e9\u4e2d", "x" * 300, "%2e%2e", "\t", "{}")


# Top-level directories a sandbox has without a mount (the host's, read-only, or its own); an image may have any.
SYSTEM_DIRS = frozenset(
    {"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "media", "mnt", "opt", "proc", "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var"}
)


def _parts(path: str) -> tuple[str, ...]:
    return tuple(part for part in path.split("/") if part)


def _outside_mounts(server: EffectiveSandbox, root: tuple[str, ...]) -> str | None:
    """The mount targets near ``root`` when it lies under none of them and the sandbox has no such
    place otherwise (a misspelt place); else None."""
    targets = [_parts(mount.target) for mount in server.mounts]
    if not root or any(root[: len(target)] == target or target[: len(root)] == root for target in targets):
        return None
    beside = [target for target in targets if target and target[0] == root[0]]
    if not beside and (root[0] in SYSTEM_DIRS or server.image is not None):  # the root file system (or an image) may have it
        return None
    return ", ".join("/" + "/".join(target) for target in beside or targets) or "none"


def problem(server: EffectiveSandbox, test: ArgTest) -> str | None:
    kind = test.kind
    if kind == "regex":
        regex = SafeRegex(str(test.regex), test.case == "insensitive")
        if not regex.can_match():
            return "the regex matches no string: the test never holds"
        if all(regex.fullmatch(probe) for probe in PROBES):
            return "the regex matches every value tried: the test holds for anything"
    low, high = (test.range.min, test.range.max) if test.range is not None else (None, None)
    if low is not None and high is not None and low > high:
        return f"the range is empty (min {low} > max {high}): the test never holds"
    if kind == "prefix" and test.prefix == "":
        return "an empty prefix: the test holds for any string"
    if test.is_path and kind in ("glob", "prefix"):
        text = str(getattr(test, kind))
        root = Glob(text).root if kind == "glob" else _parts(text)
        if (kind == "glob" and all(part == "**" for part in _parts(text))) or (kind == "prefix" and not root):
            return f"{text!r} takes in every absolute path: the test holds for any path"
        beside = _outside_mounts(server, root)
        if beside is not None:
            return f"{text!r} lies under none of the server's mounts ({beside}) nor anywhere else the sandbox has: the test never holds for a file the server can reach"
    return None


def check(plan: Plan) -> Iterator[Finding]:
    for server, name, _rule, test, path in argument_tests(plan):
        found = problem(server, test)
        if found is not None:
            yield Finding(path=(*path, test.kind), message=f"'{name}': the test of argument '{test.arg}': {found}")


RULE = Rule(
    id="HR005",
    slug="argument-condition-vacuous",
    severity="medium",
    summary="An argument condition never holds or always holds",
    check=check,
    doc=__doc__ or "",
)
