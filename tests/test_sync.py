"""Committed files generated from the models must match what the models produce now."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, require_tool, run_cli
from mcpspec.spec.docs import render_docs
from mcpspec.spec.models import Spec, SpecModel
from mcpspec.spec.schema import render_schema

SCHEMA_FILE = REPO / "schemas" / "mcp-sandbox.schema.json"
DOCS_FILE = REPO / "docs" / "spec.md"
SCHEMA_LINE = "# yaml-language-server: $schema=../schemas/mcp-sandbox.schema.json"


def test_committed_schema_is_up_to_date() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), "run `make schema` and commit the result"


def test_schema_command_prints_the_committed_schema() -> None:
    result = run_cli("schema")
    assert result.returncode == 0
    assert result.stdout == SCHEMA_FILE.read_text(encoding="utf-8")
    json.loads(result.stdout)


def test_committed_field_reference_is_up_to_date() -> None:
    assert DOCS_FILE.read_text(encoding="utf-8") == render_docs(), "run `make docs` and commit the result"


def _models() -> list[type[SpecModel]]:
    seen: list[type[SpecModel]] = []
    pending: list[type[SpecModel]] = [Spec]
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.append(model)
        for field in model.model_fields.values():
            text = repr(field.annotation)
            pending.extend(m for m in SpecModel.__subclasses__() if m.__name__ in text and m not in seen)
    return seen


def test_every_field_of_every_model_is_documented_with_meaning_and_example() -> None:
    docs = DOCS_FILE.read_text(encoding="utf-8")
    models = _models()
    assert len(models) >= 25
    for model in models:
        title = "Top level" if model is Spec else model.__name__
        assert f"## {title}\n" in docs, f"{title} has no section in docs/spec.md"
        section = docs.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        for name, field in model.model_fields.items():
            key = field.alias or name
            assert field.description, f"{model.__name__}.{key} has no description"
            assert field.examples, f"{model.__name__}.{key} has no example"
            assert f"| `{key}` |" in section, f"{model.__name__}.{key} is missing from docs/spec.md"


def test_there_is_an_example_per_scenario_and_a_risky_one() -> None:
    names = {path.stem for path in EXAMPLES}
    assert {"coding-agent", "browser-agent", "data-connector", "deploy-tool", "package-analysis", "risky"} <= names


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_name_the_schema_for_editors(example: Path) -> None:
    assert example.read_text(encoding="utf-8").splitlines()[0] == SCHEMA_LINE


def test_every_example_is_a_valid_spec() -> None:
    assert EXAMPLES
    result = run_cli("lint", "--select", "SU", *(str(p) for p in EXAMPLES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"{len(EXAMPLES)} files checked: no problems."


def test_every_example_validates_against_the_committed_schema_with_check_jsonschema() -> None:
    tool = require_tool("check-jsonschema")
    result = subprocess.run([tool, "--schemafile", str(SCHEMA_FILE), *(str(p) for p in EXAMPLES)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_jsonschema_also_rejects_what_the_schema_should_reject() -> None:
    tool = require_tool("check-jsonschema")
    bad = REPO / "tests" / "corpus" / "schema-rejects.yaml"
    result = subprocess.run([tool, "--verbose", "--schemafile", str(SCHEMA_FILE), str(bad)], capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stdout
    for fragment in ("'idle_timout' was unexpected", "'Bad_Name' does not match", "max_lifetime: 15 is not of type 'string'"):
        assert fragment in result.stdout, result.stdout
