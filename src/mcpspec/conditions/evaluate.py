"""Deciding a condition on a call's arguments, fail closed.

Each test gives two answers: ``must`` (it holds however the server reads the argument) and ``may``
(it could hold: it holds for some reading, or the argument cannot be judged). An argument that is
missing, of the wrong type (a string where a number is tested, a number where a string is), an
array or an object, a path with NUL, ``..`` or no leading slash, a string too long to judge: all
are ``must`` false and ``may`` true. ``not`` swaps them (not must = not may of the inside), ``all``
and ``any`` combine each. An ``allow`` rule fires on ``must``; an ``approve`` or ``refuse`` rule on
``may``: whatever cannot be judged is never allowed by a condition and always caught by one.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpspec.conditions.glob import Glob
from mcpspec.conditions.paths import readings
from mcpspec.conditions.saferegex import MAX_VALUE_CHARS, SafeRegex
from mcpspec.spec.conditions import AllOf, AnyOf, ArgRule, ArgTest, NotOf

Condition = ArgTest | AllOf | AnyOf | NotOf
MISSING = object()


@dataclass(frozen=True)
class Truth:
    must: bool
    may: bool


UNKNOWN = Truth(False, True)


@functools.lru_cache(maxsize=256)
def _regex(pattern: str, casefold: bool, dotall: bool = False) -> SafeRegex:
    return SafeRegex(pattern, casefold, dotall)


@functools.lru_cache(maxsize=256)
def _glob(pattern: str, casefold: bool) -> Glob:
    return Glob(pattern, casefold)


def _over(results: list[bool | None]) -> Truth:
    """One answer from the answers of every reading (None: that reading cannot be judged)."""
    return Truth(all(result is True for result in results), any(result is not False for result in results))


def _number(value: Any) -> bool:
    # An int is compared exactly: math.isfinite would convert it to a float (OverflowError past 1e308).
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _strings(value: str, casefold: bool) -> Sequence[str | None]:
    """A plain string as a server may read it: as written and NFKC-folded; too long: unknown."""
    if len(value) > MAX_VALUE_CHARS:
        return [None]
    forms = {value, unicodedata.normalize("NFKC", value)}
    return sorted(form.casefold() if casefold else form for form in forms)


def test(item: ArgTest, arguments: Mapping[str, Any]) -> Truth:
    value = arguments.get(item.arg, MISSING)
    casefold = item.case == "insensitive"
    kind = item.kind
    if kind == "range":
        assert item.range is not None
        if not _number(value):
            return UNKNOWN
        low, high = item.range.min, item.range.max
        inside = (low is None or value >= low) and (high is None or value <= high)
        return Truth(inside, inside)
    if kind == "equals" and not isinstance(item.equals, str):
        if _number(item.equals):
            return Truth(value == item.equals, value == item.equals) if _number(value) else UNKNOWN
        return Truth(value is item.equals, value is item.equals) if isinstance(value, bool) else UNKNOWN
    if not isinstance(value, str):
        return UNKNOWN
    wanted = str(getattr(item, kind))
    if item.is_path:
        return _over([_path(kind, wanted, segments, casefold) for segments in readings(value, casefold)])
    if kind == "regex":
        # `.` is read both ways: "rm .*" must not let "rm -rf /\n" past a refuse rule, nor allow it.
        regexes = [_regex(wanted, casefold), _regex(wanted, casefold, dotall=True)]
        return _over([None if form is None else regex.fullmatch(form) for form in _strings(value, False) for regex in regexes])
    wanted = wanted.casefold() if casefold else wanted
    if kind == "equals":
        return _over([None if form is None else form == wanted for form in _strings(value, casefold)])
    return _over([None if form is None else form.startswith(wanted) for form in _strings(value, casefold)])


def _path(kind: str, wanted: str, segments: tuple[str, ...] | None, casefold: bool) -> bool | None:
    if segments is None:
        return None
    if kind == "glob":
        return _glob(wanted, casefold).matches(segments)
    mine = tuple(part for part in (wanted.casefold() if casefold else wanted).split("/") if part)
    if kind == "equals":
        return segments == mine
    return segments[: len(mine)] == mine


def truth(condition: Condition, arguments: Mapping[str, Any]) -> Truth:
    if isinstance(condition, ArgTest):
        return test(condition, arguments)
    if isinstance(condition, NotOf):
        inner = truth(condition.not_, arguments)
        return Truth(not inner.may, not inner.must)
    parts = [truth(child, arguments) for child in (condition.all if isinstance(condition, AllOf) else condition.any)]
    combine = all if isinstance(condition, AllOf) else any
    return Truth(combine(part.must for part in parts), combine(part.may for part in parts))


@dataclass(frozen=True)
class Ruling:
    """What the tool's ``when`` decides of one call: the rule that fired (or ``otherwise``)."""

    action: str  # allow, approve or refuse
    label: str  # "when[0]", "when[1] (output area)" or "otherwise": never an argument's value


def label(rules: list[ArgRule], index: int) -> str:
    name = rules[index].name
    return f"when[{index}]" + (f" ({name})" if name else "")


def rule(rules: list[ArgRule], otherwise: str | None, arguments: Mapping[str, Any] | None) -> Ruling | None:
    """The first rule that fires on ``arguments``, else ``otherwise``; None when neither decides."""
    given: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
    for index, item in enumerate(rules):
        result = truth(item.if_, given)
        if result.must if item.then == "allow" else result.may:
            return Ruling(item.then, label(rules, index))
    return Ruling(otherwise, "otherwise") if otherwise is not None else None
