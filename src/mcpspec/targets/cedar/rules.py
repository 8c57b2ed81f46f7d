"""A tool's verdicts as Cedar conditions: where a call is allowed, where it goes to approval.

`mcpspec run` decides a call by the tool's argument rules (``when``, first that fires) and then its
approval mode (docs/run.md). Each argument test is read two ways, as ``conditions.evaluate`` reads it:
MUST (it holds however the server reads the argument) and MAY (it could hold). Here each test becomes
two Cedar expressions, one that implies MUST and one that MAY implies, so the regions written are
never larger than `mcpspec run`'s:

- allowed: some ``allow`` rule's MUST holds and no earlier rule MAY have fired (or none MAY have
  fired and the tool is allowed without a rule);
- approval: the same for ``approve`` rules (MUST implies MAY, so the rule surely fires).

A string test MAY hold for a string other than its value (NFKC reads ``ｍａｉｎ`` as ``main``), so Cedar
knows it surely does not only where the argument is another string the tool's rules name (each one
NFKC leaves as it is): after ``refuse if branch == main``, a later rule still sees ``branch == preview``.

Only tests Cedar states exactly are compiled: a string equal to a string that NFKC leaves as it is,
compared case-sensitively and not as a path, and a boolean equal to a boolean. A number (a gateway
may turn JSON numbers into decimals), a prefix (Cedar's ``like`` has no length bound, and
`mcpspec run` judges neither a value longer than 4096 characters nor one whose NFKC form differs),
a glob, a regular expression, a path or a case-insensitive test is not: the tool is then denied.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcpspec.conditions.evaluate import may_read_as
from mcpspec.conditions.saferegex import MAX_VALUE_CHARS
from mcpspec.ir.plan import Plan
from mcpspec.rules.facts import approval_mode
from mcpspec.spec.conditions import AllOf, AnyOf, ArgRule, ArgTest, NotOf, tests
from mcpspec.spec.models import Tool
from mcpspec.targets.cedar.literal import string

TRUE, FALSE = "true", "false"
Condition = ArgTest | AllOf | AnyOf | NotOf


class NotExact(ValueError):
    """An argument rule Cedar cannot state exactly (the message says why)."""


@dataclass(frozen=True, slots=True)
class Arguments:
    """How a gateway shows a call's arguments to Cedar: ``has(name)`` guards ``value(name)``."""

    has: Callable[[str], str]
    value: Callable[[str], str]
    refused: Callable[[str], str | None]  # why an argument's name cannot be tested here, or None


@dataclass(frozen=True, slots=True)
class Regions:
    """Where a tool's calls are allowed and where they need approval (Cedar conditions, or FALSE)."""

    allow: str
    approve: str
    types: dict[str, str]  # argument name -> the Cedar type its tests compare with (String, Boolean)


def both(parts: Sequence[str]) -> str:
    if FALSE in parts:
        return FALSE
    kept = [part for part in parts if part != TRUE]
    return TRUE if not kept else kept[0] if len(kept) == 1 else "(" + " && ".join(kept) + ")"


def either(parts: Sequence[str]) -> str:
    if TRUE in parts:
        return TRUE
    kept = [part for part in parts if part != FALSE]
    return FALSE if not kept else kept[0] if len(kept) == 1 else "(" + " || ".join(kept) + ")"


def negate(part: str) -> str:
    return FALSE if part == TRUE else TRUE if part == FALSE else f"!({part})"


def _exact_string(item: ArgTest) -> bool:
    wanted = item.equals
    return (item.kind == "equals" and not item.is_path and isinstance(wanted, str) and not isinstance(wanted, bool) and item.case == "sensitive"
            and unicodedata.normalize("NFKC", wanted) == wanted and len(wanted) <= MAX_VALUE_CHARS and "\x00" not in wanted)


def _test(item: ArgTest, args: Arguments, types: dict[str, str], named: dict[str, set[str]]) -> tuple[str, str]:
    """(an expression implying MUST, one implied by MAY) for one test."""
    why = args.refused(item.arg)
    if why is not None:
        raise NotExact(why)
    if item.kind != "equals" or item.is_path:
        raise NotExact(f"a {'path ' if item.is_path else ''}{item.kind} test on {item.arg!r} (Cedar states only equality exactly)")
    wanted = item.equals
    kind = "Boolean" if isinstance(wanted, bool) else "String" if isinstance(wanted, str) else None
    if kind is None:
        raise NotExact(f"a number test on {item.arg!r} (a gateway may read a JSON number as a decimal)")
    if types.setdefault(item.arg, kind) != kind:
        raise NotExact(f"{item.arg!r} is compared both as a string and as a boolean")
    present = f"{args.has(item.arg)} && {args.value(item.arg)}"
    if isinstance(wanted, bool):
        # A boolean argument is judged exactly: it may equal `wanted` unless it is surely the other one.
        return f"({present} == {str(wanted).lower()})", f"!({present} == {str(not wanted).lower()})"
    assert isinstance(wanted, str)
    if item.case != "sensitive":
        raise NotExact(f"a case-insensitive test on {item.arg!r}")
    if not _exact_string(item):
        raise NotExact(f"{item.arg!r} is compared with a string NFKC changes (or one too long to judge)")
    # Equal as written means equal in every reading; another string may read as `wanted` (NFKC, stripped,
    # unquoted, `/bin/rm` as `rm`: conditions.evaluate's readings), unless it is one of the other strings
    # the rules name and none of its readings is `wanted`.
    others = [f"{args.value(item.arg)} == {string(other)}" for other in sorted(named.get(item.arg, set()) - {wanted})
              if not may_read_as(other, wanted)]
    surely_not = f"({args.has(item.arg)} && {either(others)})" if others else FALSE
    return f"({present} == {string(wanted)})", negate(surely_not)


def _condition(condition: Condition, args: Arguments, types: dict[str, str], named: dict[str, set[str]]) -> tuple[str, str]:
    if isinstance(condition, ArgTest):
        return _test(condition, args, types, named)
    if isinstance(condition, NotOf):
        must, may = _condition(condition.not_, args, types, named)
        return negate(may), negate(must)
    parts = [_condition(child, args, types, named) for child in (condition.all if isinstance(condition, AllOf) else condition.any)]
    join = both if isinstance(condition, AllOf) else either
    return join([must for must, _ in parts]), join([may for _, may in parts])


def regions(plan: Plan, tool: Tool, args: Arguments) -> Regions:
    """The tool's allowed and approval regions; raises NotExact when a rule cannot be stated exactly."""
    fallback = tool.otherwise or ("allow" if approval_mode(plan, tool) is None else "approve")
    return _regions(tool.when, fallback, args)


def _regions(rules: Sequence[ArgRule], fallback: str, args: Arguments) -> Regions:
    types: dict[str, str] = {}
    named: dict[str, set[str]] = {}  # argument -> the strings the rules compare it with exactly
    for item in rules:
        for test in tests(item.if_):
            if _exact_string(test):
                named.setdefault(test.arg, set()).add(str(test.equals))
    found: dict[str, list[str]] = {"allow": [], "approve": [], "refuse": []}
    quiet: list[str] = []  # for each earlier rule: it surely did not fire
    for item in rules:
        must, may = _condition(item.if_, args, types, named)
        found[item.then].append(both([*quiet, must]))
        quiet.append(negate(may))
    found[fallback].append(both(quiet))
    return Regions(either(found["allow"]), either(found["approve"]), types)
