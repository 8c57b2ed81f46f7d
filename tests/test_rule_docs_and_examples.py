"""Generated rule docs stay in sync; the examples show what the catalog catches."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, REPO, run_cli
from mcpspec.api import load
from mcpspec.report.ruledocs import render_tree
from mcpspec.rules.base import CATEGORIES
from mcpspec.rules.pipeline import LintOptions, lint_plan
from mcpspec.rules.registry import all_rules, find

RULE_DOCS = REPO / "docs" / "rules"


def test_catalog_has_at_least_45_rules_across_every_area() -> None:
    rules = all_rules()
    assert len(rules) >= 45
    areas = {rule.category for rule in rules}
    assert set(CATEGORIES.values()) - {"graph"} <= areas


def test_docs_rules_is_generated_from_the_rules() -> None:
    expected = render_tree()
    present = {path.name: path.read_text(encoding="utf-8") for path in RULE_DOCS.glob("*.md")}
    assert sorted(present) == sorted(expected), "run `make docs` and commit docs/rules/"
    for name, text in expected.items():
        assert present[name] == text, f"docs/rules/{name} is out of date: run `make docs`"


def test_rules_command_lists_every_rule_and_explain_prints_docs() -> None:
    listed = json.loads(run_cli("rules", "--format", "json").stdout)
    assert [item["id"] for item in listed] == [rule.id for rule in all_rules()]
    rule = all_rules()[0]
    for name in (rule.id, rule.slug):
        result = run_cli("explain", name)
        assert result.returncode == 0
        assert result.stdout.startswith(f"# {rule.id} {rule.slug}\n")
        assert "## Why is this risky" in result.stdout
    assert run_cli("explain", "NOPE999").returncode == 2


def _active(example: str) -> list[tuple[str, str]]:
    plan = load(REPO / "examples" / example)
    return [(r.code, r.severity) for r in lint_plan(plan, LintOptions()) if r.suppression is None]


def test_risky_example_fires_rules_of_every_category() -> None:
    fired = {find(code).category for code, _ in _active("risky.yaml") if find(code) is not None}  # type: ignore[union-attr]
    assert set(CATEGORIES.values()) - {"graph", "suppressions", "targets", "tool-poisoning"} <= fired


@pytest.mark.parametrize("example", [p.name for p in EXAMPLES if p.name != "risky.yaml"])
def test_clean_examples_have_no_high_or_critical_findings(example: str) -> None:
    serious = [(code, severity) for code, severity in _active(example) if severity in ("critical", "high")]
    assert serious == []


def test_risky_example_fires_every_rule_but_keeps_suppressions_clean() -> None:
    fired = {code for code, _ in _active("risky.yaml")} | {r.code for r in lint_plan(load(REPO / "examples" / "risky.yaml"), LintOptions())}
    everything = {rule.id for rule in all_rules()}
    hygiene = {rule.id for rule in all_rules() if rule.category == "suppressions"}
    build_only = {rule.id for rule in all_rules() if rule.category in ("targets", "tool-poisoning")}  # build; lock and run
    needs_schemas = {"HR006"}  # fires on the tool schemas a lock pins; no lock sits beside the examples (its fixtures have one)
    assert everything - hygiene - build_only - needs_schemas - fired == set()
    assert fired & hygiene == set()
