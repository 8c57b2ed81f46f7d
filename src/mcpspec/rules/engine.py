"""Run rules over a Plan and place every finding in the file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from mcpspec.diagnostics import Diagnostic, Span, SpecPath
from mcpspec.ir.plan import Plan
from mcpspec.perf import quick_init
from mcpspec.redact import redact
from mcpspec.rules.base import Rule

# Spec errors (YM..., SC...) are not risks but stop everything: they rank above critical.
Level = Literal["error", "critical", "high", "medium", "low", "info"]
LEVELS: tuple[Level, ...] = ("error", "critical", "high", "medium", "low", "info")


@quick_init
@dataclass(frozen=True, slots=True)
class RelatedLocation:
    span: Span
    path: SpecPath
    note: str


@quick_init
@dataclass(frozen=True, slots=True)
class Suppression:
    """Why a result does not count: an inline comment, a waiver or the baseline."""

    kind: Literal["inline", "waiver", "baseline"]
    justification: str


@quick_init
@dataclass(frozen=True, slots=True)
class Result:
    """One positioned finding of one rule (or one spec error) in one file."""

    code: str
    slug: str
    severity: Level
    file: str
    span: Span
    path: SpecPath
    message: str
    related: tuple[RelatedLocation, ...] = ()
    suppression: Suppression | None = field(default=None)
    # Every item the message names in short (JSON output lists them).
    items: tuple[str, ...] = ()

    def suppressed(self, suppression: Suppression) -> Result:
        return replace(self, suppression=suppression)


def run_rules(plan: Plan, rules: Iterable[Rule]) -> list[Result]:
    """Every finding of ``rules`` on ``plan``, positioned, sorted by place then code."""
    place = plan.source.anchor_span
    file = plan.file
    # Notes repeat (about a third of the 206,000 related places of a 10,000-server lint): redact each once.
    redacted: dict[str, str] = {}

    def masked(text: str) -> str:
        found = redacted[text] = redact(text)
        return found

    # Written as plain loops with positional arguments: at 10,000 servers this builds about
    # 70,000 results and 200,000 related places, and the per-item overhead is the cost.
    results: list[Result] = []
    add = results.append
    for rule in rules:
        check = rule.check
        if check is None:
            continue
        code, slug, severity = rule.id, rule.slug, rule.severity
        for finding in check(plan):
            path, hops = finding.path, finding.related
            related = tuple([RelatedLocation(place(hop.path), hop.path, redacted.get(hop.note) or masked(hop.note)) for hop in hops]) if hops else ()
            add(Result(code, slug, severity, file, finding.span or place(path), path, redact(finding.message), related, None, finding.items))
    results.sort(key=place_order)
    return results


def place_order(result: Result) -> tuple[int, int, str]:
    """The order results are listed in: by line, column, then rule code."""
    return result.span.line, result.span.col, result.code


def from_diagnostic(diagnostic: Diagnostic) -> Result:
    """A spec error as a result, so every output format shows it the same way."""
    return Result(
        code=diagnostic.code,
        slug=SPEC_ERROR_SLUGS.get(diagnostic.code, "spec-error"),
        severity="error",
        file=diagnostic.file,
        span=diagnostic.span,
        path=diagnostic.path,
        message=redact(diagnostic.message),
    )


SPEC_ERROR_SLUGS = {
    "YM001": "yaml-syntax-error",
    "YM002": "duplicate-key",
    "YM003": "tab-indentation",
    "YM004": "unsupported-tag",
    "YM005": "alias-expansion",
    "YM006": "nesting-too-deep",
    "YM007": "several-documents",
    "YM008": "empty-file",
    "YM009": "bad-encoding",
    "YM010": "file-too-large",
    "SC001": "unknown-key",
    "SC002": "missing-key",
    "SC003": "wrong-type",
    "SC004": "invalid-value",
    "SC005": "unresolved-reference",
    "SC006": "inconsistent-settings",
    "SC007": "client-config-not-spec",
}
