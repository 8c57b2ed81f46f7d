"""Three realistic specs, written from the public documentation of well-known MCP servers.

careful-team.yaml is what a careful team writes: lint reports nothing above
``low`` on it. hasty-team.yaml and browser-research.yaml carry planted risks,
each marked on its line by a comment ``# PLANTED <RULE-ID> [<RULE-ID>...]``
(an ID twice means two findings there): lint must report each planted ID on
that line, or name the line among the finding's related locations. All three
are valid for mcpspec and for the published JSON Schema.
"""

from __future__ import annotations

import datetime
import json
import re
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
import yaml

from mcpspec.api import load
from mcpspec.rules.engine import Result
from mcpspec.rules.pipeline import LintOptions, lint_plan
from mcpspec.rules.registry import find

HERE = Path(__file__).parent / "realistic"
REPO = Path(__file__).parent.parent
SEVERE = ("critical", "high", "medium")
PLANTED = re.compile(r"#\s*PLANTED\s+((?:[A-Z]{2}\d{3}\s*)+)")
# Rules a spec cannot satisfy without running its servers: each with the reason it is left out.
NEEDS_RUNNING_SERVERS = {
    "TS008": "needs mcp-sandbox.lock, which `mcpspec lock` writes by starting each server; none is installed here",
}
OPTIONS = LintOptions(ignore=tuple(NEEDS_RUNNING_SERVERS), today=datetime.date(2026, 6, 1))
PLANTED_SPECS = ("hasty-team.yaml", "browser-research.yaml")


def lint(name: str) -> list[Result]:
    return [r for r in lint_plan(load(HERE / name, display_name=name), OPTIONS) if r.suppression is None]


def planted(name: str) -> Counter[tuple[int, str]]:
    """(line, rule ID) -> how many findings the comments on that line plant."""
    wanted: Counter[tuple[int, str]] = Counter()
    for number, line in enumerate((HERE / name).read_text(encoding="utf-8").splitlines(), start=1):
        match = PLANTED.search(line)
        if match:
            wanted.update((number, rule_id) for rule_id in match.group(1).split())
    return wanted


def test_careful_team_has_nothing_above_low() -> None:
    severe = [f"{r.span.line}:{r.span.col} {r.code} [{r.severity}] {r.message}" for r in lint("careful-team.yaml") if r.severity in SEVERE]
    assert severe == []


@pytest.mark.parametrize("name", PLANTED_SPECS)
def test_every_planted_risk_is_reported_on_its_line(name: str) -> None:
    wanted = planted(name)
    assert len(wanted) >= 10, f"{name} should plant at least ten risks"
    for _, rule_id in wanted:
        assert find(rule_id) is not None, f"{name} plants {rule_id}, which is not a rule"
    results = lint(name)
    missing = []
    for (line, rule_id), count in wanted.items():
        lines_of = [{r.span.line} | {rel.span.line for rel in r.related} for r in results if r.code == rule_id]
        found = sum(1 for lines in lines_of if line in lines)
        if found < count:
            missing.append(f"{name}:{line}: {rule_id} planted {count}, reported {found}")
    assert missing == []


@pytest.mark.parametrize("name", PLANTED_SPECS)
def test_the_planted_specs_exercise_the_new_risk_rules(name: str) -> None:
    wanted = {rule_id for _, rule_id in planted(name)}
    assert {"GR001", "TS009", "SP009"} <= wanted
    everything = {rule_id for spec in PLANTED_SPECS for _, rule_id in planted(spec)}
    assert {"FS009", "SE009", "NW004"} <= everything


def test_the_new_graph_hop_is_what_catches_the_hasty_coder() -> None:
    """The coding agent's only way out is fetch on open egress: GR001 says so and points at the egress line."""
    (coder,) = [r for r in lint("hasty-team.yaml") if r.code == "GR001" and "'coder'" in r.message]
    assert coder.message.endswith("fetch.fetch sends it out without approval (open egress)")
    text = (HERE / "hasty-team.yaml").read_text(encoding="utf-8").splitlines()
    assert any("default: allow" in text[rel.span.line - 1] and rel.note.startswith("open egress") for rel in coder.related)


@pytest.mark.parametrize("name", ["careful-team.yaml", *PLANTED_SPECS])
def test_realistic_specs_are_valid_for_mcpspec_and_the_schema(name: str) -> None:
    load(HERE / name)  # raises SpecError with positioned diagnostics when not valid
    schema = json.loads((REPO / "schemas" / "mcp-sandbox.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(yaml.safe_load((HERE / name).read_text(encoding="utf-8")), schema)
