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

from test_boundary_docs import within_acme

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
WORKFLOW = ROOT / "docs" / "ci" / "mcpspec.yml"
REVIEW_WORKFLOW = ROOT / "docs" / "ci" / "mcpspec-review.yml"
BOUNDARY_WORKFLOW = ROOT / "docs" / "ci" / "mcpspec-boundary.yml"
WORKFLOWS = {"lint": WORKFLOW, "review": REVIEW_WORKFLOW, "boundary": BOUNDARY_WORKFLOW}  # job -> the workflow that holds it
MATCHER = ROOT / "docs" / "ci" / "mcpspec-matcher.json"
BIN = Path(sys.executable).parent
SEVERITY_OF_OWNER = {"mcpspec-spec-error": "error", "mcpspec-finding-error": "error", "mcpspec-finding-warning": "warning"}


def _fenced_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)


def _workflow(path: Path = WORKFLOW) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _step(job: str, name: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = _workflow(WORKFLOWS[job])["jobs"][job]["steps"]
    matches = [step for step in steps if step.get("name") == name]
    assert len(matches) == 1, f"no single step {name!r} in job {job!r}"
    return matches[0]


def test_the_page_shows_the_files_it_tells_users_to_copy() -> None:
    for workflow in WORKFLOWS.values():
        assert workflow.read_text(encoding="utf-8") in _fenced_blocks("yaml")
    assert MATCHER.read_text(encoding="utf-8") in _fenced_blocks("json")


def test_the_workflows_are_valid_for_github_actions() -> None:
    result = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS.values())],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_workflow_can_annotate_upload_and_comment() -> None:
    lint, review = _workflow(WORKFLOW), _workflow(REVIEW_WORKFLOW)
    assert lint["jobs"]["lint"]["permissions"]["security-events"] == "write"
    assert review["jobs"]["review"]["permissions"]["pull-requests"] == "write"
    assert lint["permissions"] == review["permissions"] == {"contents": "read"}, "the default token stays read-only"
    assert "::add-matcher::.github/mcpspec-matcher.json" in _step("lint", "Lint every spec in the repository")["run"]
    gate = _step("review", "Fail on privilege growth without approval")
    assert "steps.review.outputs.grew == 'true'" in gate["if"] and "env.APPROVAL_LABEL" in gate["if"]


def test_label_events_re_run_the_review_and_never_touch_lints_result() -> None:
    """YAML 1.1 reads `on` as True. Lint's workflow has no label event, so no run of it can replace
    a failed lint; and no job has an `if:`, since a skipped job passes a required check."""
    lint, review, boundary = _workflow(WORKFLOW), _workflow(REVIEW_WORKFLOW), _workflow(BOUNDARY_WORKFLOW)
    assert lint[True] == boundary[True] == {"push": {"branches": ["main"]}, "pull_request": {"types": ["opened", "synchronize", "reopened"]}}
    assert review[True] == {"pull_request": {"types": ["opened", "synchronize", "reopened", "labeled", "unlabeled"]}}
    assert all("if" not in job for workflow in (lint, review, boundary) for job in workflow["jobs"].values())


USES = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40})  # v\d+\.\d+\.\d+$")


def test_every_action_is_pinned_to_a_full_commit_hash_with_its_release_named() -> None:
    texts = [path.read_text(encoding="utf-8") for path in WORKFLOWS.values()]
    lines = [line for text in texts for line in text.splitlines() if re.match(r"^\s*(?:- )?uses:", line)]
    assert len(lines) >= 6
    unpinned = [line for line in lines if not USES.match(line)]
    assert not unpinned, unpinned
    steps = [step for path in WORKFLOWS.values() for job in _workflow(path)["jobs"].values() for step in job["steps"]]
    assert len([step for step in steps if "uses" in step]) == len(lines)
    page = DOC.read_text(encoding="utf-8")
    for text in texts:
        page = page.replace(text, "")
    assert "uses:" not in page, "the page shows no other action"


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


def _run_step(job: str, name: str, repo: Path, first: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    """A `run:` step as the runner runs it (bash -e), with the workflow's env and ours on PATH
    (after ``first``, where a test puts its stand-in for `gh`)."""
    step = _step(job, name)
    path = os.pathsep.join([*([str(first)] if first else []), str(BIN), os.environ["PATH"]])
    env = {**os.environ, **{k: str(v) for k, v in _workflow(WORKFLOWS[job])["env"].items()}, **extra, "PATH": path}
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


RUN_URL = "https://github.com/acme/agents/actions/runs/42"


def _review(repo: Path, base: str) -> tuple[subprocess.CompletedProcess[str], str]:
    result = _run_step("review", "Risk report and privilege diff", repo, BASE=base, RUN_URL=RUN_URL)
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
    assert comment.startswith(MARKER + "\n") and comment.count(MARKER) == 1
    assert (repo / "diff.txt").exists() and (repo / "report.html").exists(), "the artifact's whole diff and report"


MARKER = "<!-- mcpspec-review -->"
GITHUB_COMMENT_LIMIT = 65_536


def test_the_comment_of_a_change_to_the_risky_example_fits_github_and_says_what_it_cut(tmp_path: Path) -> None:
    """The report of risky.yaml is about 65,000 characters alone: with the diff it went over GitHub's limit."""
    _git(tmp_path, "init", "-q", "-b", "main")
    spec = tmp_path / "mcp-sandbox.yaml"
    shutil.copy(ROOT / "examples" / "risky.yaml", spec)
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    base = _git(tmp_path, "rev-parse", "HEAD")
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace('        - "webhook.site:443"', '        - "0.0.0.0/0"\n        - "webhook.site:443"', 1), encoding="utf-8")
    result, outputs = _review(tmp_path, base)
    assert result.returncode == 0, result.stderr
    assert "grew=true" in outputs
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    # GitHub counts characters; an emoji may count twice (UTF-16), so both counts stay under.
    assert len(comment) < GITHUB_COMMENT_LIMIT and len(comment.encode("utf-16-le")) // 2 < GITHUB_COMMENT_LIMIT, len(comment)
    assert comment.startswith(MARKER + "\n### mcpspec diff: privileges grew")
    assert "egress to 0.0.0.0/0 added" in comment and "## mcpspec report: risky-assistant" in comment
    assert "**Truncated**" in comment, "the report says what it left out"
    assert f"mcpspec-review artifact of [this run]({RUN_URL})" in comment
    assert "](https://mcpspec.dev/docs/rules/GR001-lethal-trifecta.md)" in comment and "](docs/rules/" not in comment
    assert "egress to all IPv4 and" in comment


def _fake_gh(tmp_path: Path, comments: list[dict[str, Any]]) -> tuple[Path, Path]:
    """A `gh` that answers `gh api` from ``comments`` (its --jq run by the real jq) and records every write."""
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed: apt-get install jq")
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (tmp_path / "comments.json").write_text(json.dumps(comments), encoding="utf-8")
    log = tmp_path / "gh-writes.jsonl"
    (bin_dir / "gh").write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        "args = sys.argv[1:]\n"
        "assert args[0] == 'api', args\n"
        "method, jq, fields, endpoint, i = 'GET', None, [], None, 1\n"
        "while i < len(args):\n"
        "    if args[i] in ('--method', '--jq', '-F'):\n"
        "        value = args[i + 1]\n"
        "        if args[i] == '--method': method = value\n"
        "        elif args[i] == '--jq': jq = value\n"
        "        else: fields.append(value)\n"
        "        i += 2\n"
        "    elif args[i] == '--paginate': i += 1\n"
        "    else: endpoint, i = args[i], i + 1\n"
        f"if method == 'GET':\n"
        f"    data = open({str(tmp_path / 'comments.json')!r}).read()\n"
        "    sys.stdout.write(subprocess.run(['jq', '-r', jq], input=data, capture_output=True, text=True, check=True).stdout if jq else data)\n"
        "else:\n"
        "    key, _, value = fields[0].partition('=')\n"
        "    body = open(value[1:], encoding='utf-8').read() if value.startswith('@') else value\n"
        f"    with open({str(log)!r}, 'a') as out: out.write(json.dumps({{'method': method, 'endpoint': endpoint, key: body}}) + '\\n')\n"
        "    print('{}')\n",
        encoding="utf-8",
    )
    (bin_dir / "gh").chmod(0o755)
    return bin_dir, log


def _post(tmp_path: Path, comments: list[dict[str, Any]]) -> list[dict[str, str]]:
    (tmp_path / "comment.md").write_text(MARKER + "\n### mcpspec diff: privileges grew\n", encoding="utf-8")
    bin_dir, log = _fake_gh(tmp_path, comments)
    result = _run_step("review", "Post the report on the pull request", tmp_path, bin_dir, GH_TOKEN="t", PR="7", REPO="acme/agents")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


OTHER_WORKFLOW = {"id": 101, "user": {"login": "github-actions[bot]"}, "body": "## Coverage report\nlines: 93%"}
PERSON_QUOTING = {"id": 102, "user": {"login": "mallory"}, "body": MARKER + "\nplease edit me instead"}
OURS = {"id": 103, "user": {"login": "github-actions[bot]"}, "body": MARKER + "\n### mcpspec diff: privileges unchanged"}


def test_the_comment_step_edits_only_the_comment_with_its_marker(tmp_path: Path) -> None:
    writes = _post(tmp_path, [OTHER_WORKFLOW, PERSON_QUOTING, OURS])
    assert writes == [{"method": "PATCH", "endpoint": "repos/acme/agents/issues/comments/103", "body": MARKER + "\n### mcpspec diff: privileges grew\n"}]


def test_the_comment_step_posts_a_new_comment_when_none_carries_the_marker(tmp_path: Path) -> None:
    """--edit-last would have edited the other workflow's comment, the last one by the same bot."""
    writes = _post(tmp_path, [OTHER_WORKFLOW, PERSON_QUOTING])
    assert [(w["method"], w["endpoint"]) for w in writes] == [("POST", "repos/acme/agents/issues/7/comments")]


def test_the_review_step_treats_a_new_spec_as_growth(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "README").write_text("x\n", encoding="utf-8")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    base = _git(tmp_path, "rev-parse", "HEAD")
    shutil.copy(ROOT / "examples" / "coding-agent.yaml", tmp_path / "mcp-sandbox.yaml")
    result, outputs = _review(tmp_path, base)
    assert result.returncode == 0, result.stderr
    assert "grew=true" in outputs and (tmp_path / "comment.md").read_text(encoding="utf-8").startswith(MARKER + "\nmcp-sandbox.yaml is new")


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


def test_the_check_hook_holds_the_staged_specs_to_the_configured_boundary(repo: Path) -> None:
    """pre-commit runs the mcpspec-check hook on the files it selects, and the boundary comes from `within:`."""
    manifest = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    hook = {**manifest["mcpspec-check"], "language": "system", "entry": f"{BIN / 'mcpspec'} check"}
    hook.pop("minimum_pre_commit_version", None)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}), encoding="utf-8")
    shutil.copy(ROOT / "docs" / "boundary" / "acme-org.yaml", repo / "boundary.yaml")
    (repo / ".mcpspec.yaml").write_text("within: boundary.yaml\n", encoding="utf-8")
    _git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(repo / ".pre-commit-home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run([str(BIN / "pre-commit"), "run", "--files", "mcp-sandbox.yaml", "notes.yaml", "--verbose"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "mcp-sandbox.yaml:114:5: BX004 docs has process.max_runtime none; the boundary allows at most 15m" in result.stdout
    assert "notes.yaml" not in result.stdout, "the hook selects specs by name, as lint's does"
    spec = repo / "mcp-sandbox.yaml"
    spec.write_text(within_acme(spec.read_text(encoding="utf-8")), encoding="utf-8")
    _git(repo, "add", "-A")
    result = subprocess.run([str(BIN / "pre-commit"), "run", "--files", "mcp-sandbox.yaml", "--verbose"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mcp-sandbox.yaml stays within" in result.stdout


def test_the_boundary_step_checks_every_spec_against_the_configured_boundary(repo: Path) -> None:
    """The boundary job with `within:` in the config: exit 1 on an excess, SARIF on the spec line;
    and the review's report and diff read the same config."""
    shutil.copy(ROOT / "docs" / "boundary" / "acme-org.yaml", repo / "boundary.yaml")
    (repo / ".mcpspec.yaml").write_text("within: boundary.yaml\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "boundary")
    base = _git(repo, "rev-parse", "HEAD")
    result = _run_step("boundary", "Check every spec against the boundary", repo)
    assert result.returncode == 1, result.stderr
    verdicts = [line for line in result.stdout.splitlines() if " excesses over " in line]
    assert [line.split(" over ")[0] for line in verdicts] == ["mcp-sandbox.yaml: 5 excesses", "team/legacy.mcp-sandbox.yaml: 262 excesses"], verdicts
    sarif = json.loads((repo / "boundary.sarif").read_text(encoding="utf-8"))
    found = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in sarif["runs"][0]["results"]}
    assert ("BX004", "mcp-sandbox.yaml") in found and ("BX007", "mcp-sandbox.yaml") in found and ("BX001", "team/legacy.mcp-sandbox.yaml") in found
    # a pull request that removes a time limit: the review says the excess is new, and fails as growth
    spec = repo / "mcp-sandbox.yaml"
    text = spec.read_text(encoding="utf-8")
    limitless = "  process: {allow: [], listeners: false, background: {allowed: false}}"
    spec.write_text(text.replace(limitless, limitless[:-1] + ", max_runtime: 10m}", 1), encoding="utf-8")
    assert spec.read_text(encoding="utf-8") != text
    _git(repo, "commit", "-q", "-am", "limit")
    base = _git(repo, "rev-parse", "HEAD")
    spec.write_text(text, encoding="utf-8")
    result, outputs = _review(repo, base)
    assert result.returncode == 0, result.stderr
    assert "grew=true" in outputs
    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert "new excess: BX004" in comment and "### Boundary excesses (5)" in comment
