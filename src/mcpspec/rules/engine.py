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
    source = plan.source
    # Notes repeat (about half of the 285,000 texts of a 10,000-server lint): redact each once.
    redacted: dict[str, str] = {}

    def masked(text: str) -> str:
        found = redacted.get(text)
        if found is None:
            found = redacted[text] = redact(text)
        return found

    results = [
        Result(
            code=rule.id,
            slug=rule.slug,
            severity=rule.severity,
            file=plan.file,
            span=finding.span or source.anchor_span(finding.path),
            path=finding.path,
            message=redact(finding.message),
            related=tuple(RelatedLocation(source.anchor_span(item.path), item.path, masked(item.note)) for item in finding.related),
            items=finding.items,
        )
        for rule in rules
        if rule.check is not None
        for finding in rule.check(plan)
    ]
    results.sort(key=lambda r: (r.span.line, r.span.col, r.code))
    return results


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
}
