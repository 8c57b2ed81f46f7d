"""Meta-tests over the whole catalog: identity, docs, executable examples, fixtures."""

from __future__ import annotations

import dataclasses
import datetime
import re
from pathlib import Path

import pytest

from mcpspec.api import load_text
from mcpspec.ir.plan import LockState, Plan
from mcpspec.rules.base import CATEGORIES, DOC_SECTIONS, RULE_ID, SLUG, Rule, doc_sections, yaml_block
from mcpspec.rules.engine import run_rules
from mcpspec.rules.pipeline import LintOptions, lint_plan
from mcpspec.rules.registry import all_rules, find
from mcpspec.targets.build import build_plan, build_target
from poisoning_cases import findings as poisoning_findings
from poisoning_cases import parse as parse_case

FIXTURES = Path(__file__).parent / "fixtures"
RULES = all_rules()


def test_ids_and_slugs_are_well_formed_and_unique() -> None:
    assert len({r.id for r in RULES}) == len(RULES)
    assert len({r.slug for r in RULES}) == len(RULES)
    for rule in RULES:
        assert RULE_ID.match(rule.id) and rule.id[:2] in CATEGORIES, rule.id
        assert SLUG.match(rule.slug), rule.slug
        assert find(rule.id) is rule and find(rule.slug) is rule and find(rule.id.lower()) is rule


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_docs_have_every_section_in_order(rule: Rule) -> None:
    titles = list(doc_sections(rule.doc))
    assert [t for t in titles if t in DOC_SECTIONS] == list(DOC_SECTIONS), f"{rule.id} sections: {titles}"
    assert rule.summary and not rule.summary.endswith(".")
    for title in DOC_SECTIONS:
        assert rule.section(title), f"{rule.id}: '{title}' is empty"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_example_fires_and_use_instead_stays_silent(rule: Rule) -> None:
    example = yaml_block(rule.section("Example"))
    fixed = yaml_block(rule.section("Use instead"))
    assert example and fixed, f"{rule.id}: Example and Use instead need a ```yaml block"
    assert fires(rule, example, "example"), f"{rule.id}: the Example does not fire"
    assert not fires(rule, fixed, "use-instead"), f"{rule.id}: the Use instead fires"


# A doc example has no directory: its first line says which lock sits beside it, if any, and
# which arguments one pinned tool takes ("...pins files; write_file takes path, content").
LOCK_COMMENT = re.compile(
    r"\A# (?:no mcp-sandbox\.lock(?P<none>)|mcp-sandbox\.lock beside this file pins (?P<servers>[\w, -]+))\b(?:; (?P<tool>\w+) takes (?P<args>[\w, ]+))?"
)


def with_lock(plan: Plan, text: str) -> Plan:
    match = LOCK_COMMENT.match(text)
    if match is None:
        return plan
    pinned = None if match.group("none") is not None else frozenset(s.strip(" '") for s in match.group("servers").split(","))
    arguments = {}
    if pinned is not None and match.group("tool"):
        names = frozenset(name.strip() for name in match.group("args").split(","))
        arguments = {server: {match.group("tool"): names} for server in pinned}
    return dataclasses.replace(plan, lock=LockState(pinned, arguments=arguments))


def fires(rule: Rule, text: str, name: str) -> bool:
    if rule.category == "tool-poisoning":
        # Judged on what a server offers, not on the plan: the example is a poisoning case.
        return any(f.rule == rule.id for f in poisoning_findings(parse_case(text)))
    plan = with_lock(load_text(text, f"{rule.id}-{name}.yaml"), text)
    if rule.category == "targets":
        return any(r.code == rule.id for r in build_plan(plan, build_target(text)).active)
    if rule.category == "suppressions":
        # Suppression rules judge the other rules' results: run the whole pipeline.
        return any(r.code == rule.id for r in lint_plan(plan, LintOptions(today=datetime.date(2026, 6, 1))))
    return bool(run_rules(plan, [rule]))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_every_rule_has_failing_and_passing_fixtures(rule: Rule) -> None:
    if rule.category == "tool-poisoning":  # their fixtures are the corpus (tests/test_poisoning.py)
        poisoned = (FIXTURES.parent.parent / "data" / "poisoning" / "poisoned").glob("*.yaml")
        assert any(f"- {rule.id} " in path.read_text(encoding="utf-8") for path in poisoned), f"{rule.id} has no poisoned case"
        return
    folder = FIXTURES / rule.id
    assert list(folder.glob("fail_*.yaml")), f"{rule.id} has no fail_*.yaml fixture"
    assert list(folder.glob("pass_*.yaml")), f"{rule.id} has no pass_*.yaml fixture"


def test_no_fixture_folder_without_a_rule() -> None:
    for folder in FIXTURES.iterdir():
        assert folder.is_dir() and find(folder.name) is not None, f"{folder.name} names no rule"
