"""The lint command end to end: formats, several outputs, exit statuses, config,
suppressions and the baseline, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, SARIF_SCHEMA

SPEC = """\
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      - {from: /srv/data, to: /data, mode: rw}
      - {from: /srv/logs, to: /logs, mode: rw}
    tools:
      read: {effects: [reads_private]}
"""


def lint(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | (env or {})
    return subprocess.run([sys.executable, "-m", "mcpspec", "lint", *args], cwd=cwd, capture_output=True, text=True, env=environment, timeout=60, check=False)


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "mcp-sandbox.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def codes(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    return [(r["code"], r["path"]) for r in json.loads(result.stdout)["results"] if r["suppression"] is None]


def test_text_output_has_position_severity_slug_frame_and_summary(spec: Path) -> None:
    result = lint(spec.name, "--select", "FS004", cwd=spec.parent)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("mcp-sandbox.yaml:7:44: FS004 [medium] writable-mount-read-only-tools: server 'files' ")
    assert lines[1].startswith("  7 |") and set(lines[2].strip()) == {"^"}
    assert lines[-1] == "2 problems (2 medium) in 1 of 1 file."
    assert "\x1b[" not in result.stdout


def test_json_output_is_versioned_data(spec: Path) -> None:
    result = lint(spec.name, "--select", "FS004", "--format", "json", cwd=spec.parent)
    data = json.loads(result.stdout)
    assert data["format_version"] == 1
    assert data["summary"] == {"files": 1, "problems": 2, "suppressed": 0, "by_severity": {"medium": 2}}
    assert codes(result) == [("FS004", "servers.files.mounts[0].mode"), ("FS004", "servers.files.mounts[1].mode")]


def test_several_formats_and_outputs_in_one_run(spec: Path) -> None:
    result = lint(spec.name, "--select", "FS004", "-f", "sarif", "-o", "out.sarif", "-f", "junit", "-o", "out.xml", "-f", "json", cwd=spec.parent)
    assert result.returncode == 1
    assert len(json.loads((spec.parent / "out.sarif").read_text())["runs"][0]["results"]) == 2
    assert len(ET.parse(spec.parent / "out.xml").getroot().iter("failure").__next__().attrib["message"]) > 0
    assert json.loads(result.stdout)["summary"]["problems"] == 2
    refused = lint(spec.name, "-f", "sarif", "-f", "json", cwd=spec.parent)
    assert refused.returncode == 2 and "only one format can go to stdout" in refused.stderr


def test_fail_on_and_exit_zero_decide_the_status(spec: Path) -> None:
    assert lint(spec.name, "--select", "FS004", "--fail-on", "high", cwd=spec.parent).returncode == 0
    assert lint(spec.name, "--select", "FS004", "--fail-on", "medium", cwd=spec.parent).returncode == 1
    assert lint(spec.name, "--select", "FS004", "--fail-on", "never", cwd=spec.parent).returncode == 0
    assert lint(spec.name, "--select", "FS004", "--exit-zero", cwd=spec.parent).returncode == 0
    assert lint(spec.name, "--fail-on", "sometimes", cwd=spec.parent).returncode == 2
    assert lint(spec.name, "--select", "NOPE999", cwd=spec.parent).returncode == 2


def test_spec_errors_fail_whatever_fail_on_says(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("version: 1\nproject: p\nservers: {a: {comand: [x]}}\n", encoding="utf-8")
    result = lint("bad.yaml", "--fail-on", "never", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    assert codes(result) == [("SC001", "servers.a.comand")]


def test_inline_suppressions_with_reason_apply_and_can_be_turned_off(spec: Path) -> None:
    text = SPEC.replace("to: /data, mode: rw}", "to: /data, mode: rw}  # mcpspec: ignore[FS004] reason: importer rewrites it")
    text = text.replace("      - {from: /srv/logs", "      # mcpspec: ignore[writable-mount-read-only-tools] reason: log rotation\n      - {from: /srv/logs")
    spec.write_text(text, encoding="utf-8")
    quiet = lint(spec.name, "--select", "FS004,SU", "--format", "json", cwd=spec.parent)
    assert quiet.returncode == 0 and codes(quiet) == []
    data = json.loads(quiet.stdout)
    assert data["summary"]["suppressed"] == 2
    assert {r["suppression"]["kind"] for r in data["results"]} == {"inline"}
    central = lint(spec.name, "--select", "FS004,SU", "--no-inline-suppressions", "--format", "json", cwd=spec.parent)
    assert central.returncode == 1 and [c for c, _ in codes(central)] == ["FS004", "FS004"]


def test_a_suppression_reason_ends_at_a_following_comment(spec: Path) -> None:
    text = SPEC.replace("to: /data, mode: rw}", "to: /data, mode: rw}  # mcpspec: ignore[FS004] reason: importer rewrites it # TODO: drop in 2027")
    text = text.replace("      - {from: /srv/logs", "      # mcpspec: ignore[FS004] # no reason, only a comment\n      - {from: /srv/logs")
    spec.write_text(text, encoding="utf-8")
    result = lint(spec.name, "--select", "FS004,SU", "--format", "json", cwd=spec.parent)
    reasons = [r["suppression"]["justification"] for r in json.loads(result.stdout)["results"] if r["suppression"]]
    assert reasons == ["importer rewrites it"]
    assert codes(result) == [("SU001", ""), ("FS004", "servers.files.mounts[1].mode")]  # a comment is no reason


def test_config_file_is_found_upward_and_applied(spec: Path) -> None:
    (spec.parent / ".mcpspec.yaml").write_text("select: [FS004]\nseverity: {FS004: high}\nfail-on: high\n", encoding="utf-8")
    nested = spec.parent / "deploy"
    nested.mkdir()
    result = lint(str(spec), "--format", "json", cwd=nested)
    assert result.returncode == 1
    assert json.loads(result.stdout)["summary"]["by_severity"] == {"high": 2}
    (spec.parent / ".mcpspec.yaml").write_text("selcet: [FS004]\n", encoding="utf-8")
    broken = lint(str(spec), cwd=nested)
    assert broken.returncode == 2 and "selcet" in broken.stderr


def test_the_config_beside_the_spec_applies_from_any_working_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "deploy").mkdir(parents=True)
    (project / ".mcpspec.yaml").write_text("select: [FS004]\nseverity: {FS004: high}\nper-file-ignores: {'deploy/quiet*.yaml': [FS004]}\n", encoding="utf-8")
    (project / "deploy" / "mcp-sandbox.yaml").write_text(SPEC, encoding="utf-8")
    (project / "deploy" / "quiet.mcp-sandbox.yaml").write_text(SPEC, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".mcpspec.yaml").write_text("ignore: [FS004]\n", encoding="utf-8")  # the working directory's: never used
    seen = set()
    for cwd in (project, project / "deploy", elsewhere, tmp_path):
        result = lint(str(project / "deploy"), "--format", "json", cwd=cwd)
        data = json.loads(result.stdout)
        seen.add((result.returncode, json.dumps(data["summary"]), tuple(sorted((Path(r["file"]).name, r["code"]) for r in data["results"]))))
    assert seen == {(1, json.dumps({"files": 2, "problems": 2, "suppressed": 0, "by_severity": {"high": 2}}), (("mcp-sandbox.yaml", "FS004"),) * 2)}
    (elsewhere / "mcp-sandbox.yaml").write_text(SPEC, encoding="utf-8")
    both = lint(str(project / "deploy" / "mcp-sandbox.yaml"), "mcp-sandbox.yaml", "--format", "json", cwd=elsewhere)
    assert both.returncode == 1
    by_file = [(Path(r["file"]).parent.name or "elsewhere", r["code"]) for r in json.loads(both.stdout)["results"]]
    assert by_file[:2] == [("deploy", "FS004"), ("deploy", "FS004")]  # each file, its own config, in the order given
    assert by_file[2:] and all(where == "elsewhere" and code != "FS004" for where, code in by_file[2:])
    refused = lint(str(project / "deploy" / "mcp-sandbox.yaml"), "mcp-sandbox.yaml", "--write-baseline", cwd=elsewhere)
    assert refused.returncode == 2 and "under 2 different configs" in refused.stderr


def test_pyproject_config_and_per_file_ignores(spec: Path) -> None:
    (spec.parent / "pyproject.toml").write_text('[tool.mcpspec]\nselect = ["FS"]\n[tool.mcpspec.per-file-ignores]\n"mcp-sandbox*.yaml" = ["FS004"]\n', encoding="utf-8")
    result = lint(spec.name, "--format", "json", cwd=spec.parent)
    assert result.returncode == 0, result.stdout
    assert codes(result) == []


def test_baseline_accepts_known_findings_and_survives_edits(spec: Path) -> None:
    written = lint(spec.name, "--select", "FS004", "--write-baseline", cwd=spec.parent)
    assert written.returncode == 0
    baseline = json.loads((spec.parent / ".mcpspec-baseline.json").read_text())
    assert {entry["path"] for entry in baseline["findings"]} == {"servers.files.mounts[0].mode", "servers.files.mounts[1].mode"}
    spec.write_text("# a new comment shifts every line\n" + SPEC, encoding="utf-8")
    again = lint(spec.name, "--select", "FS004", "--baseline", ".mcpspec-baseline.json", "--format", "json", cwd=spec.parent)
    assert again.returncode == 0 and codes(again) == []
    assert {r["suppression"]["kind"] for r in json.loads(again.stdout)["results"]} == {"baseline"}
    spec.write_text(SPEC + "      write: {effects: [reads_private]}\n", encoding="utf-8")
    assert lint(spec.name, "--select", "FS004", "--baseline", "missing.json", cwd=spec.parent).returncode == 2


def test_github_format_is_chosen_under_actions_and_sorted_by_severity(spec: Path) -> None:
    result = lint(spec.name, "--select", "FS004", cwd=spec.parent, env={"GITHUB_ACTIONS": "true"})
    lines = result.stdout.splitlines()
    assert lines[0].startswith("::warning file=mcp-sandbox.yaml,line=7,col=44,")
    assert "title=FS004 writable-mount-read-only-tools [medium]::" in lines[0]


def test_github_format_says_what_the_per_step_cap_drops(tmp_path: Path) -> None:
    mounts = "".join(f"      - {{from: /srv/d{i}, to: /d{i}, mode: rw}}\n" for i in range(13))
    (tmp_path / "s.yaml").write_text(SPEC.split("    mounts:\n")[0] + "    mounts:\n" + mounts + "    tools:\n      read: {effects: [reads_private]}\n", encoding="utf-8")
    lines = lint("s.yaml", "--select", "FS004", "--format", "github", cwd=tmp_path).stdout.splitlines()
    assert sum(line.startswith("::warning ") for line in lines) == 10
    assert lines[-2].startswith("::notice::3 more findings were not annotated")


def _validator() -> object:
    from jsonschema import Draft7Validator

    return Draft7Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


def test_sarif_of_every_example_validates_against_the_sarif_schema(tmp_path: Path) -> None:
    validator = _validator()
    result = subprocess.run([sys.executable, "-m", "mcpspec", "lint", *map(str, EXAMPLES), "--format", "sarif", "--exit-zero"],
                            cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0
    log = json.loads(result.stdout)
    errors = sorted(validator.iter_errors(log), key=str)  # type: ignore[attr-defined]
    assert not errors, errors[0]
    run = log["runs"][0]
    assert run["results"], "the risky example should produce results"
    rule_ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    for item in run["results"]:
        assert item["ruleId"] in rule_ids
        assert item["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
        assert item["partialFingerprints"]["mcpspecLogicalPath/v1"]
    for rule in run["tool"]["driver"]["rules"]:
        if not rule["id"].startswith(("SC", "YM")):
            assert isinstance(rule["properties"]["security-severity"], str) and rule["helpUri"].startswith("https://")


def test_sarif_of_a_clean_run_still_has_a_results_array_and_suppressions_carry_justification(spec: Path) -> None:
    validator = _validator()
    clean = json.loads(lint(spec.name, "--select", "SU001", "--format", "sarif", cwd=spec.parent).stdout)
    assert clean["runs"][0]["results"] == []
    spec.write_text(SPEC.replace("to: /data, mode: rw}", "to: /data, mode: rw}  # mcpspec: ignore[FS004] reason: importer"), encoding="utf-8")
    log = json.loads(lint(spec.name, "--select", "FS004", "--format", "sarif", cwd=spec.parent).stdout)
    assert not list(validator.iter_errors(log))  # type: ignore[attr-defined]
    suppressed = [r for r in log["runs"][0]["results"] if r.get("suppressions")]
    assert suppressed[0]["suppressions"] == [{"kind": "inSource", "justification": "importer"}]


def test_junit_lists_a_failure_per_finding(spec: Path) -> None:
    result = lint(spec.name, "--select", "FS004", "--format", "junit", cwd=spec.parent)
    root = ET.fromstring(result.stdout)
    assert [f.attrib["type"] for f in root.iter("failure")] == ["medium", "medium"]


def test_output_files_are_replaced_whole(spec: Path) -> None:
    target = spec.parent / "report.json"
    target.write_text("old", encoding="utf-8")
    lint(spec.name, "--select", "FS004", "-f", "json", "-o", "report.json", cwd=spec.parent)
    assert json.loads(target.read_text())["summary"]["problems"] == 2
    assert not list(spec.parent.glob(".report.json.*.tmp"))


def test_no_output_format_repeats_a_literal_secret(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2" * 9
    (tmp_path / "rules.yaml").write_text(
        "version: 1\nproject: p\nservers:\n  a:\n    command: [x, '--url', 'https://bob:hunter2hunter2@db.example.com']\n"
        f"    env: {{set: {{GITHUB_TOKEN: {token}}}}}\n",
        encoding="utf-8",
    )
    (tmp_path / "error.yaml").write_text(f"version: 1\nproject: p\nservers:\n  a:\n    command: [x]\n    lifecycle: {{idle_timeout: {token}}}\n", encoding="utf-8")
    for name, code in (("rules.yaml", "SE001"), ("error.yaml", "SC004")):
        for output_format in ("text", "json", "sarif", "github", "junit"):
            result = lint(name, "--format", output_format, "--exit-zero", cwd=tmp_path)
            assert code in result.stdout, (name, output_format)
            assert token not in result.stdout and "hunter2hunter2" not in result.stdout, (name, output_format)
