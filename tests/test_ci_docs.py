"""The CI page is ready to copy: its files match the page, the workflow is valid and runs, the matcher reads lint's text."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
WORKFLOW = ROOT / "docs" / "ci" / "mcpspec.yml"
MATCHER = ROOT / "docs" / "ci" / "mcpspec-matcher.json"
BIN = Path(sys.executable).parent
SEVERITY_OF_OWNER = {"mcpspec-spec-error": "error", "mcpspec-finding-error": "error", "mcpspec-finding-warning": "warning"}


def _fenced_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)


def _workflow() -> dict[str, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _step(job: str, name: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = _workflow()["jobs"][job]["steps"]
    matches = [step for step in steps if step.get("name") == name]
    assert len(matches) == 1, f"no single step {name!r} in job {job!r}"
    return matches[0]


def test_the_page_shows_the_files_it_tells_users_to_copy() -> None:
    assert WORKFLOW.read_text(encoding="utf-8") in _fenced_blocks("yaml")
    assert MATCHER.read_text(encoding="utf-8") in _fenced_blocks("json")


def test_the_workflow_is_valid_for_github_actions() -> None:
    result = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_workflow_can_annotate_upload_and_comment() -> None:
    workflow = _workflow()
    assert workflow["jobs"]["lint"]["permissions"]["security-events"] == "write"
    assert workflow["jobs"]["review"]["permissions"]["pull-requests"] == "write"
    assert workflow["permissions"] == {"contents": "read"}, "the default token stays read-only"
    assert "::add-matcher::.github/mcpspec-matcher.json" in _step("lint", "Lint every spec in the repository")["run"]
    gate = _step("review", "Fail on privilege growth without approval")
    assert "steps.review.outputs.grew == 'true'" in gate["if"] and "env.APPROVAL_LABEL" in gate["if"]
    assert "labeled" in workflow[True]["pull_request"]["types"], "adding the label must re-run the check"  # YAML 1.1 reads `on` as True


def _lint(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "mcpspec"), "lint", *arguments], capture_output=True, text=True, cwd=cwd, timeout=300)


def _matched(text: str) -> list[tuple[str, int, int, str, str]]:
    """What GitHub would annotate: (file, line, column, code, severity) per line a pattern matches (first owner wins)."""
    owners = json.loads(MATCHER.read_text(encoding="utf-8"))["problemMatcher"]
    found = []
    for line in text.splitlines():
        for owner in owners:
            pattern = owner["pattern"][0]
            match = re.match(pattern["regexp"], line)
            if match:
                found.append((match[pattern["file"]], int(match[pattern["line"]]), int(match[pattern["column"]]), match[pattern["code"]], owner["severity"]))
                break
    return found


def test_the_matcher_annotates_every_problem_lint_reports_and_nothing_else() -> None:
    files = ["examples/risky.yaml", "tests/corpus/demo-broken.yaml", "examples/coding-agent.yaml"]
    results = json.loads(_lint("--format", "json", *files).stdout)["results"]
    expected = sorted(
        (r["file"], r["line"], r["column"], r["code"], "error" if r["severity"] in {"error", "critical", "high"} else "warning")
        for r in results
        if r["suppression"] is None
    )
    assert any(severity == "warning" for *_, severity in expected) and any(code.startswith("SC") for _, _, _, code, _ in expected)
    assert sorted(_matched(_lint("--format", "text", *files).stdout)) == expected


def _git(repo: Path, *arguments: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *arguments], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def _run_step(job: str, name: str, repo: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """A `run:` step as the runner runs it (bash -e), with the workflow's env and ours on PATH."""
    step = _step(job, name)
    env = {**os.environ, **{k: str(v) for k, v in _workflow()["env"].items()}, **extra, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env["GITHUB_OUTPUT"] = str(repo / ".github-output")
    env.pop("GITHUB_ACTIONS", None)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q", "-b", "main")
    shutil.copy(ROOT / "examples" / "coding-agent.yaml", tmp_path / "mcp-sandbox.yaml")
    (tmp_path / "team").mkdir()
    shutil.copy(ROOT / "examples" / "risky.yaml", tmp_path / "team" / "legacy.mcp-sandbox.yaml")
    (tmp_path / "notes.yaml").write_text("servers: this is not a spec\n", encoding="utf-8")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def test_the_lint_step_finds_every_spec_and_writes_sarif(repo: Path) -> None:
    result = _run_step("lint", "Lint every spec in the repository", repo)
    assert result.returncode == 1, result.stderr  # risky findings fail the job
    assert result.stdout.startswith("::add-matcher::.github/mcpspec-matcher.json\n")
    annotated = {file for file, *_ in _matched(result.stdout)}
    assert annotated == {"team/legacy.mcp-sandbox.yaml"} | ({"mcp-sandbox.yaml"} & annotated), annotated
    sarif = json.loads((repo / "mcpspec.sarif").read_text(encoding="utf-8"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert "team/legacy.mcp-sandbox.yaml" in uris and "notes.yaml" not in uris


def _review(repo: Path, base: str) -> tuple[subprocess.CompletedProcess[str], str]:
    result = _run_step("review", "Risk report and privilege diff", repo, BASE=base)
    return result, (repo / ".github-output").read_text(encoding="utf-8") if (repo / ".github-output").exists() else ""


def test_the_review_step_flags_growth_and_writes_one_comment(repo: Path) -> None:
    base = _git(repo, "rev-parse", "HEAD")
    spec = repo / "mcp-sandbox.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("egress:\n", "egress:\n      # widened\n", 1), encoding="utf-8")
    result, outputs = _review(repo, base)
    assert result.returncode == 0, result.stderr
    assert "grew=false" in outputs, "a comment is no privilege"
    text = spec.read_text(encoding="utf-8")
    grown = text.replace('allow: ["pypi.mirror.acme.example:443"', 'allow: ["exfil.acme.example:443", "pypi.mirror.acme.example:443"', 1)
    assert grown != text
    spec.write_text(grown, encoding="utf-8")
    result, outputs = _review(repo, base)
    assert result.returncode == 0, result.stderr
    assert "grew=true" in outputs
    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert "exfil.acme.example" in comment
    assert len(comment) < 2 * 65_000


def test_the_review_step_treats_a_new_spec_as_growth(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "README").write_text("x\n", encoding="utf-8")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    base = _git(tmp_path, "rev-parse", "HEAD")
    shutil.copy(ROOT / "examples" / "coding-agent.yaml", tmp_path / "mcp-sandbox.yaml")
    result, outputs = _review(tmp_path, base)
    assert result.returncode == 0, result.stderr
    assert "grew=true" in outputs and (tmp_path / "comment.md").read_text(encoding="utf-8").startswith("mcp-sandbox.yaml is new")


def test_the_pre_commit_hook_runs_on_the_documented_files(repo: Path) -> None:
    """pre-commit itself selects the files: the manifest's `files`/`types`, with our entry as a local system hook."""
    manifest = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = {**manifest[0], "language": "system", "entry": f"{BIN / 'mcpspec'} lint"}
    hook.pop("minimum_pre_commit_version", None)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}), encoding="utf-8")
    _git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(repo / ".pre-commit-home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run([str(BIN / "pre-commit"), "run", "--all-files", "--verbose"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "team/legacy.mcp-sandbox.yaml:" in result.stdout
    assert "notes.yaml" not in result.stdout
