"""Regular expressions matched in time linear in the argument: no backtracking, whatever the pattern.

The pattern is parsed by Python's own ``re`` parser (so it means what ``re`` says it means) and run as
an NFA whose state sets are cached as a DFA (Thompson's construction): a pattern like ``(a|a)*b`` or
``(a+)+$`` costs the same per character as ``ab``. Full-match semantics: the pattern must match the
whole argument; a leading ``^``/``\\A`` and a trailing ``$``/``\\Z`` are allowed and change nothing.

Refused, with a reason: back-references, lookarounds, conditionals, atomic groups and possessive
quantifiers (they need backtracking), inline flags (case is the condition's ``case``), anchors
elsewhere, patterns longer than ``MAX_PATTERN_CHARS`` or larger than ``MAX_STATES`` once counted
repetitions are expanded. An argument longer than ``MAX_VALUE_CHARS`` is not judged (unknown).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

MAX_PATTERN_CHARS = 256
MAX_STATES = 2000
MAX_VALUE_CHARS = 4096
MAX_CACHE = 4096  # DFA transitions kept; beyond, the cache starts over (the cost stays linear)

Pred = Callable[[str], bool]
_CATEGORIES: dict[Any, Pred] = {
    _c.CATEGORY_DIGIT: str.isdecimal,
    _c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdecimal(),
    _c.CATEGORY_SPACE: str.isspace,
    _c.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    _c.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
    _c.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
}
_OPPOSITE = {
    _c.CATEGORY_DIGIT: _c.CATEGORY_NOT_DIGIT, _c.CATEGORY_SPACE: _c.CATEGORY_NOT_SPACE, _c.CATEGORY_WORD: _c.CATEGORY_NOT_WORD,
}  # fmt: skip
_STARTS = (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING)
_ENDS = (_c.AT_END, _c.AT_END_STRING)


class RegexRefused(ValueError):
    """The pattern is outside the safe subset (the message says why)."""


@dataclass
class _State:
    pred: Pred | None = None  # None: an epsilon state (``outs``) or, with no outs, the match
    outs: list[int] = field(default_factory=list)
    empty: bool = False  # a character class no character can satisfy


class _Builder:
    def __init__(self, casefold: bool, dotall: bool = False) -> None:
        self.states: list[_State] = [_State()]  # 0: the match
        self.casefold = casefold
        self.dotall = dotall

    def add(self, state: _State) -> int:
        if len(self.states) >= MAX_STATES:
            raise RegexRefused(f"the pattern is too large once its repetitions are counted (more than {MAX_STATES} states)")
        self.states.append(state)
        return len(self.states) - 1

    def char(self, pred: Pred, nxt: int, empty: bool = False) -> int:
        if self.casefold:
            base = pred
            pred = lambda ch: base(ch) or base(ch.lower()) or base(ch.upper())  # noqa: E731
        return self.add(_State(pred, [nxt], empty))

    def seq(self, items: Any, nxt: int) -> int:
        for op, arg in reversed(list(items)):
            nxt = self.item(op, arg, nxt)
        return nxt

    def item(self, op: Any, arg: Any, nxt: int) -> int:
        if op is _c.LITERAL:
            return self.char(_equal(chr(arg)), nxt)
        if op is _c.NOT_LITERAL:
            return self.char(_other(chr(arg)), nxt)
        if op is _c.ANY:
            return self.char((lambda ch: True) if self.dotall else (lambda ch: ch != "\n"), nxt)
        if op is _c.IN:
            pred, empty = _charset(arg)
            return self.char(pred, nxt, empty)
        if op is _c.SUBPATTERN:
            _, add_flags, del_flags, body = arg
            if add_flags or del_flags:
                raise RegexRefused("inline flags are not allowed: a condition's case says how case is compared")
            return self.seq(body, nxt)
        if op is _c.BRANCH:
            return self.add(_State(None, [self.seq(branch, nxt) for branch in arg[1]]))
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            low, high, body = arg
            return self.repeat(low, high, body, nxt)
        if op is _c.AT:
            raise RegexRefused("an anchor is allowed only at the start (^) or end ($) of the pattern, where it changes nothing")
        raise RegexRefused(f"{str(op).lower()} is not allowed (it needs backtracking, which a condition never does)")

    def repeat(self, low: int, high: int, body: Any, nxt: int) -> int:
        if high == _c.MAXREPEAT:
            loop = self.add(_State(None, []))
            loop_state = self.states[loop]
            loop_state.outs = [self.seq(body, loop), nxt]
            cur = loop
        else:
            cur = nxt
            for _ in range(high - low):
                cur = self.add(_State(None, [self.seq(body, cur), nxt]))
        for _ in range(low):
            cur = self.seq(body, cur)
        return cur


def _equal(char: str) -> Pred:
    return lambda ch: ch == char


def _other(char: str) -> Pred:
    return lambda ch: ch != char


def _between(low: int, high: int) -> Pred:
    return lambda ch: low <= ord(ch) <= high


def _charset(items: Any) -> tuple[Pred, bool]:
    negate = False
    preds: list[Pred] = []
    categories: set[Any] = set()
    for op, arg in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            preds.append(_equal(chr(arg)))
        elif op is _c.RANGE:
            preds.append(_between(int(arg[0]), int(arg[1])))
        elif op is _c.CATEGORY and arg in _CATEGORIES:
            categories.add(arg)
            preds.append(_CATEGORIES[arg])
        else:
            raise RegexRefused(f"{str(op).lower()} is not allowed in a character class")
    both = any(_OPPOSITE.get(cat) in categories for cat in categories)
    empty = (negate and both) or (not negate and not preds)
    if negate:
        return (lambda ch: not any(pred(ch) for pred in preds)), empty
    return (lambda ch: any(pred(ch) for pred in preds)), empty


@dataclass
class SafeRegex:
    """A compiled pattern; :meth:`fullmatch` is None for an argument too long to judge."""

    pattern: str
    casefold: bool = False
    dotall: bool = False  # ``.`` matches a newline too (how a condition that catches a call reads it)
    states: list[_State] = field(init=False)
    start: frozenset[int] = field(init=False)
    cache: dict[tuple[frozenset[int], str], frozenset[int]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.pattern) > MAX_PATTERN_CHARS:
            raise RegexRefused(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
        try:
            parsed = _parser.parse(self.pattern)
        except re.error as exc:
            raise RegexRefused(f"not a regular expression: {exc}") from None
        if parsed.state.flags & ~_c.SRE_FLAG_UNICODE:
            raise RegexRefused("inline flags are not allowed: a condition's case says how case is compared")
        items = list(parsed.data)
        if items and items[0][0] is _c.AT and items[0][1] in _STARTS:
            items = items[1:]
        if items and items[-1][0] is _c.AT and items[-1][1] in _ENDS:
            items = items[:-1]
        builder = _Builder(self.casefold, self.dotall)
        first = builder.seq(items, 0)
        self.states = builder.states
        self.start = self.closure({first})

    def closure(self, seeds: set[int]) -> frozenset[int]:
        seen: set[int] = set()
        stack = list(seeds)
        while stack:
            index = stack.pop()
            if index in seen:
                continue
            seen.add(index)
            state = self.states[index]
            if state.pred is None:
                stack.extend(state.outs)
        return frozenset(index for index in seen if self.states[index].pred is not None or index == 0)

    def fullmatch(self, value: str) -> bool | None:
        if len(value) > MAX_VALUE_CHARS:
            return None
        current = self.start
        for ch in value:
            key = (current, ch)
            following = self.cache.get(key)
            if following is None:
                if len(self.cache) >= MAX_CACHE:
                    self.cache.clear()
                pred_states = (self.states[index] for index in current if index != 0)
                following = self.closure({state.outs[0] for state in pred_states if state.pred is not None and state.pred(ch)})
                self.cache[key] = following
            if not following:
                return False
            current = following
        return 0 in current

    def can_match(self) -> bool:
        """Whether any string at all matches (a class no character satisfies is a dead end)."""
        seen: set[int] = set()
        stack = [index for index in self.start]
        while stack:
            index = stack.pop()
            if index == 0:
                return True
            if index in seen:
                continue
            seen.add(index)
            state = self.states[index]
            if state.pred is not None and state.empty:
                continue
            stack.extend(self.closure(set(state.outs)) if state.pred is not None else state.outs)
        return False
