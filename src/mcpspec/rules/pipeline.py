"""One file's lint: selected rules, suppressions and waivers, severity overrides."""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Severity
from mcpspec.rules.engine import Result, place_order, run_rules
from mcpspec.rules.registry import all_rules, find
from mcpspec.rules.suppress import apply_suppressions, waiver_label


@dataclass(frozen=True)
class LintOptions:
    """What to run and how to judge it; built from the command line and the config file."""

    select: Collection[str] | None = None  # rule IDs; None means every rule
    ignore: Collection[str] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)  # rule ID -> severity
    inline_suppressions: bool = True
    today: datetime.date = field(default_factory=datetime.date.today)

    def enabled(self, rule_id: str) -> bool:
        return (self.select is None or rule_id in self.select) and rule_id not in self.ignore


def lint_plan(plan: Plan, options: LintOptions) -> list[Result]:
    """Every result for one file, suppressed ones included (marked), sorted by place."""
    rules = [rule for rule in all_rules() if options.enabled(rule.id)]
    results = run_rules(plan, rules)
    if not options.inline_suppressions:
        results = [r for r in results if r.code not in ("SU001", "SU002")]
    outcome = apply_suppressions(plan, results, options.today, options.inline_suppressions)
    results = outcome.results
    source = plan.source
    if options.enabled("SU003"):
        for item in outcome.unused_inline:
            if not item.rules or not all(options.enabled(rule_id) for rule_id in item.rules) or any(build_only(r) for r in item.rules):
                continue  # names no real rule (SU002 reports it), or one that did not run
            span = item.comment.span
            names = ", ".join(item.rules) or "nothing known"
            results.append(Result("SU003", "unused-suppression", "low", plan.file, span, (), f"suppression of {names} matches no finding on line {item.applies_to_line}"))
    for code, slug, severity, indexes, text in (
        ("SU004", "expired-waiver", "medium", outcome.expired_waivers, "expired on {date}; the findings it covered are reported again"),
        ("SU005", "unused-waiver", "low", outcome.unused_waivers, "matches no finding"),
    ):
        if not options.enabled(code):
            continue
        for index in indexes:
            waived = find(plan.waivers[index].rule)
            if code == "SU005" and (waived is None or not options.enabled(waived.id) or build_only(waived.id)):
                continue  # an unknown rule is SU002's finding; a rule that did not run (or only runs in a build) cannot use it
            path = ("waivers", index)
            message = f"{waiver_label(plan, index)} " + text.format(date=plan.waivers[index].expires.isoformat())
            results.append(Result(code, slug, severity, plan.file, source.anchor_span(path), path, message))  # type: ignore[arg-type]
    if options.severity:
        results = [replace(r, severity=options.severity.get(r.code, r.severity)) for r in results]
    results.sort(key=place_order)
    return results


def build_only(rule_id: str) -> bool:
    """Whether a rule is reported by `mcpspec build`, not by lint (a suppression of it is not lint's to judge)."""
    rule = find(rule_id)
    return rule is not None and rule.category == "targets"
