"""Per-rule fixtures: every fail_*.yaml yields exactly its .expected findings, every pass_*.yaml none.

Layout: tests/rules/fixtures/<RULE-ID>/{fail_<case>.yaml, fail_<case>.expected, pass_<case>.yaml}.
An .expected file holds one ``LINE:COL ID message`` line per finding. Run pytest
with --update-goldens to rewrite them, then review the diff.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from mcpspec.api import load
from mcpspec.rules.engine import run_rules
from mcpspec.rules.pipeline import LintOptions, lint_plan
from mcpspec.rules.registry import find
from mcpspec.targets.build import build_plan, build_target

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(FIXTURES.glob("*/*.yaml"))


# Waiver expiry in fixtures is judged as of this day, so the goldens never age.
TODAY = datetime.date(2026, 6, 1)


def findings(case: Path) -> list[str]:
    rule = find(case.parent.name)
    assert rule is not None, f"fixture folder {case.parent.name} names no registered rule"
    plan = load(case, display_name=case.name)
    if rule.category == "targets":
        # Build rules: the fixture's first line names the target (`# target: bwrap`).
        results = [r for r in build_plan(plan, build_target(case.read_text(encoding="utf-8")), today=TODAY).active if r.code == rule.id]
    elif rule.category == "suppressions":
        # Whether a suppression or waiver is used depends on every other rule's results.
        results = [r for r in lint_plan(plan, LintOptions(today=TODAY)) if r.code == rule.id]
    else:
        results = run_rules(plan, [rule])
    return [f"{r.span.line}:{r.span.col} {r.code} {r.message}" for r in results]


def test_fixture_cases_exist() -> None:
    assert CASES, "no rule fixtures found"


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("fail_")], ids=lambda c: f"{c.parent.name}/{c.name}")
def test_fail_case_yields_exactly_the_expected_findings(case: Path, update_goldens: bool) -> None:
    got = findings(case)
    expected_file = case.with_suffix(".expected")
    if update_goldens:
        expected_file.write_text("".join(f"{line}\n" for line in got), encoding="utf-8")
    assert expected_file.exists(), f"{expected_file.name} is missing; run pytest --update-goldens"
    assert got, f"{case.name} should fire {case.parent.name}"
    assert got == expected_file.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("pass_")], ids=lambda c: f"{c.parent.name}/{c.name}")
def test_pass_case_yields_nothing(case: Path) -> None:
    assert findings(case) == []
