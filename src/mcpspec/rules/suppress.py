"""Inline suppressions, spec waivers and the baseline: which results do not count, and why.

Inline: ``# mcpspec: ignore[FS004] reason: <why>`` as a trailing comment on the
reported line or as an own-line comment on the line just above it; several
rules may be listed (``ignore[FS004, NW001]``, IDs or slugs). The reason is
mandatory: a suppression without one suppresses nothing and is reported. The reason ends
at a following `` #``, so ``reason: vendor path # TODO drop in 2027`` keeps ``vendor path``
and the rest stays an ordinary comment.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from mcpspec.diagnostics import SpecPath, format_path, parse_path
from mcpspec.ir.plan import Plan
from mcpspec.rules.engine import Result, Suppression
from mcpspec.rules.registry import find
from mcpspec.source.sourcemap import Comment

DIRECTIVE = re.compile(r"^\s*mcpspec\s*:")
INLINE = re.compile(r"^\s*mcpspec:\s*ignore\[(?P<rules>[^\]]*)\](?:\s+reason:\s*(?P<reason>.*?))?(?:\s+#.*)?\s*$")


@dataclass(frozen=True, slots=True)
class InlineSuppression:
    """One parsed ``# mcpspec: ignore[...]`` comment."""

    comment: Comment
    rules: tuple[str, ...]  # rule IDs, resolved
    unknown: tuple[str, ...]
    reason: str
    applies_to_line: int


@dataclass(frozen=True, slots=True)
class MalformedSuppression:
    comment: Comment
    problem: str


def parse_inline(comments: list[Comment]) -> tuple[list[InlineSuppression], list[MalformedSuppression]]:
    """The suppression comments of a file, and the ones that are written wrong."""
    found: list[InlineSuppression] = []
    malformed: list[MalformedSuppression] = []
    for comment in comments:
        if not DIRECTIVE.match(comment.text):
            continue
        match = INLINE.match(comment.text)
        if match is None:
            malformed.append(MalformedSuppression(comment, "is not 'mcpspec: ignore[RULE] reason: <why>'"))
            continue
        names = [name.strip() for name in match.group("rules").split(",") if name.strip()]
        reason = (match.group("reason") or "").strip()
        if not names:
            malformed.append(MalformedSuppression(comment, "names no rule inside ignore[...]"))
            continue
        if not reason:
            malformed.append(MalformedSuppression(comment, "gives no reason; write 'reason: <why>' after ignore[...]"))
            continue
        known = tuple(rule.id for rule in (find(name) for name in names) if rule is not None)
        unknown = tuple(name for name in names if find(name) is None)
        line = comment.line + 1 if comment.own_line else comment.line
        found.append(InlineSuppression(comment, known, unknown, reason, line))
    return found, malformed


@dataclass(frozen=True, slots=True)
class Outcome:
    """Results with suppressions applied, plus what the suppressions themselves got wrong."""

    results: list[Result]
    unused_inline: list[InlineSuppression]
    expired_waivers: list[int]
    unused_waivers: list[int]


def apply_suppressions(plan: Plan, results: list[Result], today: datetime.date, inline: bool = True) -> Outcome:
    """Mark each result suppressed by a waiver or an inline comment (waivers first)."""
    suppressions, _ = parse_inline(plan.source.comments()) if inline else ([], [])
    used_inline: set[int] = set()
    used_waivers: set[int] = set()
    expired = [index for index, waiver in enumerate(plan.waivers) if waiver.expires < today]
    waivers = [
        (index, waiver, find(waiver.rule), parse_path(waiver.at))
        for index, waiver in enumerate(plan.waivers)
        if index not in expired
    ]
    out: list[Result] = []
    for result in results:
        suppression: Suppression | None = None
        for index, waiver, rule, at in waivers:
            if rule is not None and rule.id == result.code and _covers(at, result.path):
                suppression = Suppression("waiver", f"{waiver.reason} (waiver until {waiver.expires.isoformat()})")
                used_waivers.add(index)
                break
        if suppression is None:
            for position, item in enumerate(suppressions):
                if item.applies_to_line == result.span.line and result.code in item.rules:
                    suppression = Suppression("inline", item.reason)
                    used_inline.add(position)
                    break
        out.append(result.suppressed(suppression) if suppression else result)
    unused_waivers = [index for index, *_ in waivers if index not in used_waivers]
    unused_inline = [item for position, item in enumerate(suppressions) if position not in used_inline]
    return Outcome(out, unused_inline, expired, unused_waivers)


def _covers(at: SpecPath, path: SpecPath) -> bool:
    return path[: len(at)] == at


def waiver_label(plan: Plan, index: int) -> str:
    waiver = plan.waivers[index]
    return f"waiver for {waiver.rule} at {format_path(parse_path(waiver.at))}"
