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
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpspec.conditions.glob import Glob
from mcpspec.conditions.paths import readings
from mcpspec.conditions.saferegex import MAX_VALUE_CHARS, SafeRegex
from mcpspec.poisoning.text import latin, visible
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
    """A plain string as a server reads it: as written and NFKC-folded; too long, or with a NUL (a C
    string ends there): unknown."""
    if len(value) > MAX_VALUE_CHARS or "\x00" in value:
        return [None]
    forms = {value, unicodedata.normalize("NFKC", value)}
    return sorted(form.casefold() if casefold else form for form in forms)


_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_SPACES = re.compile(r"\s+")
MAX_CAUGHT_READINGS = 32


def _command_name(form: str) -> str:
    """``form`` with its first word's directories dropped: ``/bin/rm -rf x`` runs what ``rm -rf x`` does."""
    head, space, rest = form.partition(" ")
    return head.rsplit("/", 1)[-1] + space + rest if "/" in head else form


_CAUGHT_READINGS: tuple[Callable[[str], str], ...] = (
    lambda form: unicodedata.normalize("NFKC", form),
    str.strip,  # what surrounds a value: most servers, and every shell, drop it
    lambda form: _SPACES.sub(" ", form).strip(),  # a shell splits words at any run of blanks
    visible,  # zero-width, bidi, tag and control characters
    lambda form: _ESCAPED.sub(r"\1", form).replace("'", "").replace('"', ""),  # a shell's quote and backslash removal
    latin,  # Cyrillic and Greek look-alikes
    _command_name,
)


@functools.lru_cache(maxsize=1024)
def _caught(value: str, casefold: bool) -> tuple[str | None, ...]:
    """Every string a server might take ``value`` for, for rules that catch (refuse, approve): the readings
    of :func:`_strings` and all that the readings above reach from them; more than ``MAX_CAUGHT_READINGS``: unknown too.
    An allow rule never needs them: it holds on the value as the server surely reads it."""
    base = _strings(value, False)
    if None in base:
        return (None,)
    forms: set[str] = {form for form in base if form is not None}
    todo = list(forms)
    while todo and len(forms) <= MAX_CAUGHT_READINGS:
        form = todo.pop()
        for reading in _CAUGHT_READINGS:
            other = reading(form)
            if other not in forms:
                forms.add(other)
                todo.append(other)
    found: tuple[str | None, ...] = tuple(sorted({form.casefold() if casefold else form for form in forms}))
    return (*found, None) if todo else found


def may_read_as(value: str, wanted: str) -> bool:
    """Whether a case-sensitive ``equals wanted`` test may hold on ``value`` (a refuse or approve rule would catch it)."""
    caught = _caught(value, False)
    return None in caught or wanted in caught


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
        holds: Callable[[str], bool] = lambda form: any(regex.fullmatch(form) for regex in regexes)  # noqa: E731
        forms, caught = _strings(value, False), _caught(value, False)
    else:
        wanted = wanted.casefold() if casefold else wanted
        holds = wanted.__eq__ if kind == "equals" else lambda form: form.startswith(wanted)
        forms, caught = _strings(value, casefold), _caught(value, casefold)
    # Holds for certain on the surely read forms; may hold on any form a server might take the value for (each judged once).
    judged = {form: holds(form) for form in {*forms, *caught} if form is not None}
    return Truth(_over([judged.get(form) if form is not None else None for form in forms]).must, _over([judged.get(form) if form is not None else None for form in caught]).may)


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
