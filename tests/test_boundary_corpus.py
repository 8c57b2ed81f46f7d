"""`mcpspec check --within` on a corpus of near-miss spec/boundary pairs (tests/data/boundary/CASE/):
each case's expected.txt holds exactly what check prints, every excess with its place and witness,
or the one "stays within" line for a contained pair. A case without expected.txt fails
(`--update-goldens` writes it, for review)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from mcpspec import api
from mcpspec.boundary.check import check
from mcpspec.boundary.render import text

CORPUS = REPO / "tests" / "data" / "boundary"
CASES = sorted(path.name for path in CORPUS.iterdir() if path.is_dir())


def _printed(case: Path) -> str:
    spec = api.load(case / "spec.yaml", "spec.yaml")
    boundary = api.load(case / "boundary.yaml", "boundary.yaml")
    return text([(spec, check(spec, boundary))], "boundary.yaml")


@pytest.mark.parametrize("name", CASES)
def test_check_finds_exactly_the_expected_excesses(name: str, update_goldens: bool) -> None:
    case = CORPUS / name
    expected = case / "expected.txt"
    printed = _printed(case)
    if update_goldens:
        expected.write_text(printed, encoding="utf-8")
    assert expected.is_file(), f"{name}: no expected.txt; every case states what check must print"
    assert printed == expected.read_text(encoding="utf-8")


def test_the_corpus_holds_contained_pairs_and_pairs_that_differ_only_after_resolution() -> None:
    verdicts = {name: (CORPUS / name / "expected.txt").read_text(encoding="utf-8") for name in CASES}
    contained = [name for name, printed in verdicts.items() if "stays within" in printed]
    assert len(contained) >= 5 and len(verdicts) - len(contained) >= 10
    for name in ("from-defaults", "lifecycle-builtin-default", "mount-mode-from-workspace", "preset-narrower-deny"):
        assert "BX" in verdicts[name], name


def test_the_command_exits_like_lint_and_writes_sarif_and_json(tmp_path: Path) -> None:
    case = CORPUS / "wildcard-apex"
    found = run_cli("check", str(case / "spec.yaml"), "--within", str(case / "boundary.yaml"), "--format", "sarif")
    assert found.returncode == 1, found.stderr
    (result,) = json.loads(found.stdout)["runs"][0]["results"]
    assert result["ruleId"] == "BX001" and result["locations"][0]["physicalLocation"]["region"]["startLine"] == 6
    contained = run_cli("check", str(CORPUS / "wildcard-contained" / "spec.yaml"), "-w", str(case / "boundary.yaml"), "-f", "json")
    assert contained.returncode == 0 and json.loads(contained.stdout)["contained"] is True
    assert run_cli("check", str(case / "spec.yaml")).returncode == 2  # no boundary anywhere
    missing = run_cli("check", str(case / "spec.yaml"), "-w", str(tmp_path / "none.yaml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_the_config_names_the_boundary(tmp_path: Path) -> None:
    case = CORPUS / "wildcard-apex"
    for name in ("spec.yaml", "boundary.yaml"):
        (tmp_path / name).write_text((case / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / ".mcpspec.yaml").write_text("within: boundary.yaml\n", encoding="utf-8")
    found = run_cli("check", "spec.yaml", cwd=tmp_path)
    assert found.returncode == 1 and "acme.example:443" in found.stdout
    assert os.path.basename(found.stdout.splitlines()[-1].split(" over ")[1].split(" in ")[0]) == "boundary.yaml"
    # Several specs at once, as pre-commit passes them: one verdict line each, exit 1 if any exceeds.
    (tmp_path / "inside.yaml").write_text((CORPUS / "wildcard-contained" / "spec.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    both = run_cli("check", "inside.yaml", "spec.yaml", cwd=tmp_path)
    assert both.returncode == 1 and "inside.yaml stays within" in both.stdout and "spec.yaml: 1 excess over" in both.stdout


def test_a_bad_boundary_or_config_is_named_at_its_line(tmp_path: Path) -> None:
    case = CORPUS / "wildcard-apex"
    bad = tmp_path / "boundary.yaml"
    bad.write_text((case / "boundary.yaml").read_text(encoding="utf-8").replace("*.acme.example:443", "*.acme.example:99999"), encoding="utf-8")
    found = run_cli("check", str(case / "spec.yaml"), "--within", str(bad))
    assert found.returncode == 2 and f"{bad}:6:" in found.stderr and "Traceback" not in found.stderr
    (tmp_path / ".mcpspec.yaml").write_text("within: 3\n", encoding="utf-8")
    (tmp_path / "spec.yaml").write_text((case / "spec.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    config = run_cli("check", "spec.yaml", cwd=tmp_path)
    assert config.returncode == 2 and ".mcpspec.yaml:1:" in config.stderr and "Traceback" not in config.stderr


def test_the_sarif_log_is_valid_sarif() -> None:
    import jsonschema

    schema = json.loads((REPO / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    case = CORPUS / "process-policy"
    found = run_cli("check", str(case / "spec.yaml"), "-w", str(case / "boundary.yaml"), "-f", "sarif")
    log = json.loads(found.stdout)
    jsonschema.validate(log, schema)
    assert {rule["id"] for rule in log["runs"][0]["tool"]["driver"]["rules"]} == {"BX006"}


def test_every_newer_dimension_has_a_contained_pair_and_an_excess_that_shows_only_after_resolution() -> None:
    """Images, env, logging, transport, argument rules, tool limits and the proxy's refusals each have
    a pair that stays within and one that does not; some differ only once defaults, the images list,
    built-in defaults or the proxy's refusals are applied."""
    verdicts = {name: (CORPUS / name / "expected.txt").read_text(encoding="utf-8") for name in CASES}
    for code, within, beyond in (
        ("BX008", "image-registry-contained", "image-from-images-map"),
        ("BX009", "env-list-contained", "env-from-defaults"),
        ("BX010", "logging-contained", "logging-builtin-audit"),
        ("BX011", "transport-contained", "transport-bind-wide"),
        ("BX012", "when-refuse-kept", "when-refuse-dropped"),
        ("BX013", "tool-limits-contained", "tool-rate-from-server"),
        ("BX001", "refused-ranges-contained", "refused-loopback-listed"),
    ):
        assert "stays within" in verdicts[within], within
        assert f" {code} " in verdicts[beyond], beyond
