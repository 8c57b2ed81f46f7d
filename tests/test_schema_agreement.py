"""The JSON Schema and the linter agree on the bad-input corpus and on every good file.

Editors and check-jsonschema see only the schema, so every file `mcpspec lint` rejects
with a spec error (YM/SC codes, not a rule finding) must be rejected by the schema too,
unless the rule is one a schema cannot express: those are listed in SCHEMA_CANNOT with
the reason, and an entry fails the test once the schema rejects its file (remove it).
"Rejected by the schema" includes a file the YAML parser in front of it refuses: the
editor reports that as well.

Each file goes through the real `mcpspec lint` (one run for all), through jsonschema
in this process (Python's regex dialect), and through the check-jsonschema command
(ECMA-262 patterns, as editors have them) for every file it can read.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from jsonschema import Draft202012Validator

from conftest import EXAMPLES, REPO, require_tool, run_cli

SCHEMA_FILE = REPO / "schemas" / "mcp-sandbox.schema.json"
CORPUS = REPO / "tests" / "corpus"
BAD = [*sorted((CORPUS / "bad").glob("*.yaml")), CORPUS / "schema-rejects.yaml", CORPUS / "demo-broken.yaml"]
GOOD = [*EXAMPLES, CORPUS / "clean.yaml", *sorted((REPO / "tests" / "rules" / "fixtures").rglob("*.yaml"))]

# File -> why the schema accepts what the linter rejects. Keep it short: each line is a
# rule editors cannot show.
SCHEMA_CANNOT: dict[str, str] = {
    "18-merge-key.yaml": "YAML: the language refuses merge keys (<<), but a parser merges them before the schema sees the data",
    "42-unresolved-secret-use.yaml": "cross-reference: secrets[].use must name an entry under the top-level secrets",
    "43-agent-unknown-server.yaml": "cross-reference: an agent's servers must be defined under servers",
    "44-mount-from-unknown-workspace-dir.yaml": "cross-reference: workspace.<dir> must be a dir under workspace.dirs",
    "48-waiver-at-points-nowhere.yaml": "cross-reference: a waiver's `at` must name a place in this file",
    "60-mounts-at-one-path.yaml": "one field unique across list items (mounts[].to): uniqueItems compares whole items",
    "61-read-only-dir-mounted-rw.yaml": "cross-reference: a mount's mode against the mode of the workspace dir it names",
}
# check-jsonschema itself hangs on an alias bomb and overflows the stack on deep nesting;
# jsonschema in this process still checks both (PyYAML keeps aliases shared).
NOT_FOR_CHECK_JSONSCHEMA = {"19-alias-bomb.yaml", "20-nesting-thousands-deep.yaml"}

Verdict = Literal["accepted", "rejected", "unparsable"]


class _Loader(yaml.SafeLoader):
    """A safe loader like the ones in front of a schema: dates stay text, as in JSON,
    and a duplicate key is an error, as in check-jsonschema's and editors' parsers."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value if key.tag != "tag:yaml.org,2002:merge"]
        if len(keys) != len({repr(key) for key in keys}):
            raise yaml.constructor.ConstructorError(None, None, "duplicate key", node.start_mark)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@cache
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_verdict(path: Path) -> Verdict:
    try:
        data: Any = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (yaml.YAMLError, RecursionError, UnicodeDecodeError):
        return "unparsable"
    return "accepted" if validator().is_valid(data) else "rejected"


@cache
def lint_spec_errors() -> dict[str, list[str]]:
    """File name -> the YM/SC codes `mcpspec lint` reports for it (rule findings left out)."""
    files = [*BAD, *GOOD]
    result = run_cli("lint", "--format", "json", *(str(path) for path in files))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    codes: dict[str, list[str]] = {str(path): [] for path in files}
    for finding in json.loads(result.stdout)["results"]:
        if finding["code"][:2] in ("YM", "SC"):
            codes[finding["file"]].append(finding["code"])
    return codes


@cache
def check_jsonschema_rejects() -> set[str]:
    """Files the check-jsonschema command rejects (schema errors or parse errors)."""
    tool = require_tool("check-jsonschema")
    files = [str(path) for path in [*BAD, *GOOD] if path.name not in NOT_FOR_CHECK_JSONSCHEMA]
    proc = subprocess.run([tool, "-o", "json", "--schemafile", str(SCHEMA_FILE), *files], capture_output=True, text=True, timeout=300, check=False)
    report = json.loads(proc.stdout)
    return {entry["filename"] for entry in [*report["errors"], *report["parse_errors"]]}


def test_the_allow_list_names_files_of_the_corpus() -> None:
    names = {path.name for path in BAD}
    assert sorted(set(SCHEMA_CANNOT) - names) == []
    assert names >= NOT_FOR_CHECK_JSONSCHEMA


@pytest.mark.parametrize("path", BAD, ids=lambda path: path.name)
def test_what_lint_rejects_the_schema_rejects(path: Path) -> None:
    codes = lint_spec_errors()[str(path)]
    assert codes, f"{path.name}: mcpspec lint reports no spec error (the bad corpus holds spec errors only)"
    verdict = schema_verdict(path)
    if path.name in SCHEMA_CANNOT:
        assert verdict == "accepted", (
            f"{path.name} is {verdict} by the schema now: remove it from SCHEMA_CANNOT ({SCHEMA_CANNOT[path.name]})"
        )
    else:
        assert verdict != "accepted", f"lint rejects {path.name} ({', '.join(codes)}) but the schema accepts it"
    if path.name not in NOT_FOR_CHECK_JSONSCHEMA:
        rejected = str(path) in check_jsonschema_rejects()
        assert rejected == (verdict != "accepted"), f"check-jsonschema and jsonschema disagree on {path.name}"


@pytest.mark.parametrize("path", GOOD, ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_good_file_passes_both(path: Path) -> None:
    assert lint_spec_errors()[str(path)] == [], f"mcpspec lint reports spec errors for {path.name}"
    assert schema_verdict(path) == "accepted", list(validator().iter_errors(yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)))[:3]
    assert str(path) not in check_jsonschema_rejects(), f"check-jsonschema rejects {path}"
