"""Boundary ceilings on single tools: argument rules (``when``/``otherwise``) and per-tool limits.

Argument rules are compared as written: a condition is an opaque fact about a call's arguments,
the same condition in both files is the same fact (an ``allow`` rule fires when it surely holds,
an ``approve`` or ``refuse`` rule when it may, so the two readings are different facts), and
different conditions are taken as independent. The check then tries every way the spec's rules
can decide a call: the spec rule that fires (every earlier one not firing), or its ``otherwise``
or approval as usual; and for each, the strictest decision the boundary's rules can reach on a
call that fits. A spec decision more permissive than that is an excess. This never misses a call
the spec lets through more freely than the boundary (any real call is one of the ways tried); it
may report a pair whose conditions can never hold together (say ``/workspace/**`` and
``/etc/**``): give the spec the boundary's rule first to keep it contained.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcpspec.boundary.excess import Excess
from mcpspec.conditions import evaluate
from mcpspec.conditions.describe import rule_text
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.report.review.values import duration
from mcpspec.rules.facts import approval_mode
from mcpspec.spec.conditions import ArgRule, ArgTest, tests
from mcpspec.spec.models import Tool

# Most permissive last: refused, approved at every call, once a session, run without approval.
_LEVEL = {"refuse": 0, "approve": 1, "always": 1, "per-session": 2, None: 3, "allow": 3}


@dataclass(frozen=True, slots=True)
class _Rule:
    fact: tuple[str, bool]  # the condition's text, and whether it fires when it surely holds (allow)
    level: int
    label: str  # when[i], otherwise or the approval that decides
    condition: Any = field(default=None, compare=False)  # the rule's condition (None: otherwise or approval)


def _rules(plan: Plan, tool: Tool) -> tuple[list[_Rule], _Rule]:
    rules = [
        _Rule((_canonical(rule), rule.then == "allow"), _LEVEL[rule.then], f"when[{index}]" + (f" ({rule.name})" if rule.name else ""), rule.if_)
        for index, rule in enumerate(tool.when)
    ]
    if tool.otherwise is not None:
        return rules, _Rule(("", False), _LEVEL[tool.otherwise], "otherwise")
    mode = approval_mode(plan, tool)
    return rules, _Rule(("", False), _LEVEL[mode], f"approval {mode or 'never'}")


def _canonical(rule: ArgRule) -> str:
    data: Any = rule.if_.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    return json.dumps(data, sort_keys=True)


def _strictest(rules: Sequence[_Rule], default: _Rule, deciding: _Rule | None, false: set[tuple[str, bool]]) -> _Rule:
    """The strictest decision ``rules`` reach on a call where ``deciding``'s condition holds and
    ``false`` do not (the other conditions as the call pleases): an earlier rule whose condition may
    hold, the rule of the same condition (which fires at the latest), or ``default`` when no rule
    need fire. A condition that cannot hold beside ``deciding``'s sure one is left out."""
    true = deciding.fact if deciding is not None else None
    best: _Rule | None = None
    for candidate in rules:
        if candidate.fact in false:
            continue
        if deciding is not None and deciding.fact[1] and candidate.fact != true and disjoint(deciding.condition, candidate.condition):
            continue
        if best is None or candidate.level < best.level:
            best = candidate
        if candidate.fact == true:
            return best
    return default if best is None or default.level < best.level else best


def argument_rules(spec: Plan, sandbox: EffectiveSandbox, boundary: Plan, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    for name, tool in sandbox.tools.items():
        own = ceiling.tools.get(name)
        if own is None or not own.when:
            continue  # approval minima without argument rules are BX007's
        found = _excess(spec, tool, boundary, own)
        if found is None:
            continue
        index, deciding, strictest = found
        if index < len(tool.when):
            where = (*sandbox.path, "tools", name, "when", index)
        else:
            where = (*sandbox.path, "tools", name, "otherwise" if tool.otherwise is not None else "approval" if tool.approval is not None else "when")
        call = _concrete(spec, tool, boundary, own)
        if call is not None:
            arguments, mine, theirs = call
            told = f"{sandbox.name} {_SPEC_WORDS[mine.level].format(call=f'{name} {arguments}')} ({mine.label}); the boundary {_THEIR_WORDS[theirs.level]} ({theirs.label}{_text(own, theirs.label)})"
        else:
            later = " when no earlier rule fires" if index else ""
            told = (f"{sandbox.name} {_SPEC_WORDS[deciding.level].format(call=f'a call of {name}')} ({deciding.label}{later}) that the boundary may catch with "
                    f"{strictest.label}{_text(own, strictest.label)}, which {_THEIR_WORDS[strictest.level]}")
        yield Excess("BX012", sandbox.name, where, told)


_SPEC_WORDS = {0: "refuses {call}", 1: "asks approval of {call} at every call", 2: "asks approval of {call} once per session", 3: "runs {call} without approval"}
_THEIR_WORDS = {0: "refuses it", 1: "asks approval of it at every call", 2: "asks approval of it once per session", 3: "runs it without approval"}


def _excess(spec: Plan, tool: Tool, boundary: Plan, own: Tool) -> tuple[int, _Rule, _Rule] | None:
    """The first way the spec's rules decide a call more freely than the boundary's may: the
    spec rule's index (len(when) for its otherwise or approval), that rule, the boundary's."""
    mine, otherwise = _rules(spec, tool)
    theirs, their_default = _rules(boundary, own)
    for index in range(len(mine) + 1):
        deciding = mine[index] if index < len(mine) else otherwise
        earlier = {rule.fact for rule in mine[:index]}
        if index < len(mine) and deciding.fact in earlier:
            continue  # an earlier rule with the same condition always fires first
        strictest = _strictest(theirs, their_default, deciding if index < len(mine) else None, earlier)
        if deciding.level > strictest.level:
            return index, deciding, strictest
    return None


def decision(plan: Plan, tool: Tool, arguments: dict[str, Any]) -> _Rule:
    """What ``tool``'s rules decide of one call, exactly as `mcpspec run` does."""
    found = evaluate.rule(list(tool.when), tool.otherwise, arguments)
    if found is not None:
        return _Rule(("", False), _LEVEL[found.action], found.label)
    mode = approval_mode(plan, tool)
    return _Rule(("", False), _LEVEL[mode], f"approval {mode or 'never'}")


def _concrete(spec: Plan, tool: Tool, boundary: Plan, own: Tool) -> tuple[str, _Rule, _Rule] | None:
    """A call built from the values both files' conditions name that the spec decides more freely
    than the boundary, with both decisions; None when no such candidate is found."""
    for arguments in candidates([*tool.when, *own.when]):
        mine, theirs = decision(spec, tool, arguments), decision(boundary, own, arguments)
        if mine.level > theirs.level:
            return json.dumps(arguments, ensure_ascii=False), mine, theirs
    return None


def candidates(rules: Sequence[ArgRule], most: int = 400) -> Iterator[dict[str, Any]]:
    """Argument sets to try: each argument alone with each value a test names or one just beside it
    (a path below a prefix, one with ``..``, a number past a range's end), then no argument."""
    values: dict[str, list[Any]] = {}
    for item in rules:
        for test in tests(item.if_):
            values.setdefault(test.arg, []).extend(_near(test))
    count = 0
    for arg, found in values.items():
        for value in dict.fromkeys(found):
            count += 1
            if count > most:
                return
            yield {arg: value}
    yield {}


def _near(test: ArgTest) -> list[Any]:
    if test.range is not None:
        ends = [end for end in (test.range.min, test.range.max) if end is not None]
        return [*ends, *(end - 1 for end in ends), *(end + 1 for end in ends)]
    value = test.equals if test.kind == "equals" else getattr(test, test.kind)
    if not isinstance(value, str):
        return [value]
    if test.kind == "glob":
        value = value.replace("**", "x").replace("*", "x").replace("?", "x")
    base = value.rstrip("/")
    return [value, value + "x", f"{base}/x", f"{base}/../etc/passwd", value.upper()]


def disjoint(sure: Any, other: Any) -> bool:
    """Whether ``other`` cannot even possibly hold (an approve or refuse rule's reading) on a call
    where ``sure`` surely holds (an allow rule's): two single tests of one argument that name
    different strings, or paths whose literal leading segments part (``/workspace/output/**`` and
    ``/etc/**``). A surely holding test has judged every reading of the argument, each of which it
    names; letter case is ignored, so a test of either case that could match is never left out."""
    if not (isinstance(sure, ArgTest) and isinstance(other, ArgTest)) or sure.arg != other.arg:
        return False
    if sure.is_path and other.is_path and {sure.kind, other.kind} <= {"glob", "prefix", "equals"}:
        mine, theirs = _literal(sure), _literal(other)
        common = min(len(mine), len(theirs))
        return mine[:common] != theirs[:common]
    if not sure.is_path and not other.is_path and sure.kind == other.kind == "equals":
        a, b = sure.equals, other.equals
        if isinstance(a, str) and isinstance(b, str):
            return a.casefold() != b.casefold() and unicodedata.normalize("NFKC", a).casefold() != unicodedata.normalize("NFKC", b).casefold()
    return False


def _literal(test: ArgTest) -> tuple[str, ...]:
    """The leading segments a path test fixes, case folded (a glob's up to its first wildcard)."""
    parts = tuple(part.casefold() for part in str(getattr(test, test.kind)).split("/") if part)
    if test.kind != "glob":
        return parts
    fixed: list[str] = []
    for part in parts:
        if "*" in part or "?" in part:
            break
        fixed.append(part)
    return tuple(fixed)


def _text(tool: Tool, label: str) -> str:
    """``: if ... then ...`` of the boundary rule a label names (nothing for otherwise or approval)."""
    if not label.startswith("when["):
        return ""
    index = int(label[5:].split("]", 1)[0])
    return f": {rule_text(tool.when[index])}"


def limits(sandbox: EffectiveSandbox, ceiling: EffectiveSandbox) -> Iterator[Excess]:
    """Each tool's call timeout at most the boundary's for that tool (its own, else the server's);
    its rate (its own, and the server's, whichever is lower) at most the boundary tool's own."""
    for name, tool in sandbox.tools.items():
        mine, most = sandbox.tool_limits(name), ceiling.tool_limits(name)
        timeout, limit = mine.call_timeout, most.call_timeout
        where = (*sandbox.path, "tools", name, "limits")
        if limit is not None and (timeout is None or timeout > limit) and (tool.limits is not None or name in ceiling.tools):
            yield Excess("BX013", sandbox.name, (*where, "call_timeout") if tool.limits is not None else sandbox.origin("limits.call_timeout"),
                         f"{sandbox.name} lets one call of {name} run {duration(timeout, 'without limit')}; the boundary allows {duration(limit)} for it")
        rate = most.requests_per_minute
        if rate is None:
            continue
        rates = [r for r in (mine.requests_per_minute, sandbox.limits.requests_per_minute) if r is not None]
        if not rates or min(rates) > rate:
            often = f"{min(rates)} times a minute" if rates else "with no rate limit"
            yield Excess("BX013", sandbox.name, (*where, "requests_per_minute") if tool.limits is not None else (*sandbox.path, "tools", name),
                         f"{sandbox.name} may call {name} {often}; the boundary allows {rate} a minute for it")
