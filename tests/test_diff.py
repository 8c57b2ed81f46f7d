"""mcpspec diff: one fixture per kind of change (tests/diff/cases), git revisions, exit codes and formats."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from mcpspec.diff.model import Change, Diff
from mcpspec.diff.render import MARKDOWN_LIMIT, json_output, markdown, text, verdict_line
from mcpspec.diff.run import diff_plans, load_side
from mcpspec.ir.plan import Plan
from mcpspec.settings import Settings

CASES_DIR = REPO / "tests" / "diff" / "cases"
CASES = sorted(path for path in CASES_DIR.iterdir() if path.is_dir())
BASE = REPO / "tests" / "diff" / "base.yaml"


def _plan(path: Path | str, cwd: Path | None = None) -> Plan:
    side = load_side(str(path), cwd)
    assert side.plan is not None, side.lint.results
    return side.plan


def _diff(case: Path) -> Diff:
    args = shlex.split((case / "args").read_text(encoding="utf-8")) if (case / "args").exists() else []
    target = args[args.index("--target") + 1] if "--target" in args else None
    return diff_plans(_plan(case / "old.yaml"), _plan(case / "new.yaml"), Settings(), target, ("old.yaml", "new.yaml"))


def test_there_are_cases_for_every_kind_of_change() -> None:
    names = {case.name for case in CASES}
    wanted = {
        "egress-added", "egress-removed", "secret-granted", "secret-revoked", "secret-scope-widened", "mount-added",
        "mount-turned-rw", "approval-removed", "placement-closer", "lifecycle-relaxed", "limits-relaxed", "audit-log-off",
        "redaction-off", "server-added", "server-removed", "agent-added", "agent-membership-added", "tool-added",
        "new-attack-path", "redaction-back-on", "enforcement-dropped", "unchanged-key-reorder", "unchanged-anchor-rename",
    }
    assert wanted <= names, sorted(wanted - names)


def test_every_case_directory_has_an_expectation() -> None:
    missing = [case.name for case in CASES if not (case / "expected.txt").exists()]
    assert not missing, f"cases without expected.txt (write them with --update-goldens, then read them): {missing}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_reports_exactly_the_expected_changes(case: Path, update_goldens: bool) -> None:
    got = text(_diff(case))
    expected = case / "expected.txt"
    if update_goldens:
        expected.write_text(got, encoding="utf-8")
    assert expected.exists(), f"{case.name}: expected.txt is missing; run pytest --update-goldens and read it"
    assert got == expected.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("unchanged-")], ids=lambda c: c.name)
def test_a_policy_written_differently_is_no_change(case: Path) -> None:
    old, new = (case / "old.yaml").read_text(encoding="utf-8"), (case / "new.yaml").read_text(encoding="utf-8")
    assert old != new, "the two versions must be written differently"
    found = _diff(case)
    assert found.changes == () and found.verdict == "privileges unchanged"


def test_the_anchor_case_really_renames_an_anchor() -> None:
    old = (CASES_DIR / "unchanged-anchor-rename" / "old.yaml").read_text(encoding="utf-8")
    new = (CASES_DIR / "unchanged-anchor-rename" / "new.yaml").read_text(encoding="utf-8")
    assert "&call_limits" in old and "*call_limits" in old and "&shared_limits" in new and "*shared_limits" in new


@pytest.mark.parametrize(
    ("case", "verdict"),
    [
        ("egress-added", "privileges grew"), ("egress-removed", "privileges shrank"), ("placement-farther", "privileges shrank"),
        ("neutral-command-changed", "privileges unchanged"), ("redaction-back-on", "privileges shrank"),
    ],
)
def test_verdicts(case: str, verdict: str) -> None:
    assert _diff(CASES_DIR / case).verdict == verdict


def test_grew_and_shrank_together() -> None:
    old = BASE.read_text(encoding="utf-8")
    new = old.replace('allow: ["tracker.acme.example:443"]', 'allow: ["uploads.acme.example:443"]')
    assert new != old
    found = diff_plans(_plan(BASE), _plan_text(new), Settings())
    assert found.verdict == "privileges grew and shrank"
    assert {(c.effect, c.message) for c in found.changes} == {
        ("grew", "egress to uploads.acme.example:443 added"), ("shrank", "egress to tracker.acme.example:443 removed"),
    }


def _plan_text(text: str) -> Plan:
    from mcpspec.api import load_text

    return load_text(text, "new.yaml")


def test_enforcement_drop_names_the_target_and_the_control() -> None:
    found = _diff(CASES_DIR / "enforcement-dropped")
    dropped = [c for c in found.changes if c.category == "enforcement"]
    assert dropped and all(c.effect == "grew" and "systemd enforces" in c.message for c in dropped)
    assert any(c.old == "full" and c.new == "none" for c in dropped)


# --- the command line ---


def test_fail_on_growth_exits_1_only_when_something_grew(tmp_path: Path) -> None:
    grew = CASES_DIR / "egress-added"
    shrank = CASES_DIR / "egress-removed"
    same = CASES_DIR / "unchanged-key-reorder"
    assert run_cli("diff", str(grew / "old.yaml"), str(grew / "new.yaml")).returncode == 0
    result = run_cli("diff", str(grew / "old.yaml"), str(grew / "new.yaml"), "--fail-on-growth", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[-1].startswith("verdict: privileges grew")
    assert run_cli("diff", str(shrank / "old.yaml"), str(shrank / "new.yaml"), "--fail-on-growth", cwd=tmp_path).returncode == 0
    assert run_cli("diff", str(same / "old.yaml"), str(same / "new.yaml"), "--fail-on-growth", cwd=tmp_path).returncode == 0


def test_bad_input_exits_2_with_positioned_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BASE.read_text(encoding="utf-8").replace("    kind: data\n", "    kind: database\n"), encoding="utf-8")
    result = run_cli("diff", str(BASE), str(broken), "--fail-on-growth", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{broken}:42:11: SC004" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    missing = run_cli("diff", str(BASE), str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (2, f"mcpspec: error: {tmp_path / 'nope.yaml'}: no such file\n")
    assert run_cli("diff", str(BASE), str(BASE), "-f", "html").returncode == 2
    assert run_cli("diff", str(BASE), str(BASE), "--target", "nowhere").returncode == 2


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@acme.example", "-c", "commit.gpgsign=false", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is not installed: apt-get install git")
    _git(tmp_path, "init", "-q", "-b", "main")
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(BASE.read_text(encoding="utf-8"), encoding="utf-8")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "first")
    spec.write_text((CASES_DIR / "egress-added" / "new.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    _git(tmp_path, "commit", "-q", "-am", "second")
    return tmp_path


def test_git_revisions_are_read_with_git_show(repo: Path) -> None:
    result = run_cli("diff", "git:HEAD~1:mcp-sandbox.yaml", "git:HEAD:mcp-sandbox.yaml", "-f", "json", cwd=repo)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["old"], data["new"], data["verdict"]) == ("git:HEAD~1:mcp-sandbox.yaml", "git:HEAD:mcp-sandbox.yaml", "privileges grew")
    assert [c["message"] for c in data["changes"]] == ["egress to uploads.acme.example:443 added"]
    # A revision against the work tree's file, and the same revision twice.
    assert run_cli("diff", "git:HEAD:mcp-sandbox.yaml", "mcp-sandbox.yaml", cwd=repo).stdout == "verdict: privileges unchanged\n"


def test_a_bad_revision_or_path_is_named_and_exits_2(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    cases = {
        "git:HEAD~5:mcp-sandbox.yaml": "git:HEAD~5:mcp-sandbox.yaml: unknown revision 'HEAD~5'",
        "git:HEAD:nothing.yaml": "git:HEAD:nothing.yaml: no file 'nothing.yaml' in revision HEAD",
        "git:HEAD": "git:HEAD: a git source is git:REVISION:PATH (git:HEAD~1:mcp-sandbox.yaml)",
        "git:--output=x:mcp-sandbox.yaml": "git:--output=x:mcp-sandbox.yaml: a revision cannot start with '-'",
    }
    for source, message in cases.items():
        result = run_cli("diff", source, "mcp-sandbox.yaml", cwd=repo)
        assert (result.returncode, result.stderr) == (2, f"mcpspec: error: {message}\n"), source
    elsewhere = tmp_path_factory.mktemp("no-repo")
    result = run_cli("diff", "git:HEAD:mcp-sandbox.yaml", str(repo / "mcp-sandbox.yaml"), cwd=elsewhere)
    assert (result.returncode, result.stderr) == (2, "mcpspec: error: git:HEAD:mcp-sandbox.yaml: not inside a git repository\n")


def test_errors_in_a_revision_point_at_rev_and_path(repo: Path) -> None:
    spec = repo / "mcp-sandbox.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("    kind: data\n", "    kind: database\n"), encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "broken")
    result = run_cli("diff", "git:HEAD~1:mcp-sandbox.yaml", "git:HEAD:mcp-sandbox.yaml", cwd=repo)
    assert result.returncode == 2
    assert result.stderr.startswith("HEAD:mcp-sandbox.yaml:42:11: SC004 "), result.stderr
    assert "42 |     kind: database" in result.stderr


def test_output_file_is_written_atomically(tmp_path: Path) -> None:
    case = CASES_DIR / "egress-added"
    out = tmp_path / "diff.md"
    out.write_text("previous", encoding="utf-8")
    result = run_cli("diff", str(case / "old.yaml"), str(case / "new.yaml"), "-f", "markdown", "-o", str(out), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert out.read_text(encoding="utf-8").startswith("### mcpspec diff: privileges grew")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diff.md"]


# --- formats ---


def test_json_is_stable_and_documented() -> None:
    data = json.loads(json_output(_diff(CASES_DIR / "secret-scope-widened")))
    assert list(data) == ["schema", "old", "new", "target", "verdict", "grew", "shrank", "counts", "findings", "boundary", "changes"]
    assert data["boundary"] is None  # no boundary given
    assert data["schema"] == "mcpspec-diff/2"
    assert data["counts"] == {"grew": 1, "shrank": 0, "neutral": 0}
    assert data["changes"] == [{
        "server": "issues", "category": "secrets", "effect": "grew",
        "message": "secret issues-token scope widened: issues:write added",
        "old": ["issues:read"], "new": ["issues:read", "issues:write"],
    }]
    docs = (REPO / "docs" / "diff.md").read_text(encoding="utf-8")
    for key in data:
        assert f"`{key}`" in docs, key
    for key in data["changes"][0]:
        assert f"`{key}`" in docs, key


def test_text_has_one_line_per_change_and_the_verdict_last() -> None:
    found = _diff(CASES_DIR / "lifecycle-relaxed")
    lines = text(found).splitlines()
    assert len(lines) == len(found.changes) + 1
    assert all(line.startswith("+ ") for line in lines[:-1])
    assert lines[-1] == "verdict: privileges grew (4 grew, 0 shrank, 0 neutral)"


def test_markdown_is_collapsible_and_escapes_what_the_spec_says() -> None:
    change = Change("x<script>alert(1)</script>", "tools", "grew", "tool <img src=x onerror=alert(1)> added by @someone [link](https://evil.acme.example)")
    out = markdown(Diff("old.yaml", "new.yaml", (change,)))
    assert "<details open>" in out and "<summary>" in out and "</details>" in out
    assert "<script>" not in out and "<img" not in out and "@someone" not in out and "[link](" not in out


def test_markdown_stays_under_the_comment_limit() -> None:
    changes = tuple(Change(f"server-{i:04d}", "egress", "grew", f"egress to host-{j}.acme.example:443 added " + "x" * 80) for i in range(300) for j in range(10))
    found = Diff("old.yaml", "new.yaml", changes)
    out = markdown(found)
    assert len(out) <= MARKDOWN_LIMIT
    assert "more changes are not shown" in out and "mcpspec diff -f text" in out
    assert out.count("<details") == out.count("</details>")
    assert len(markdown(found, limit=5_000)) <= 5_000


def test_a_secret_shaped_value_never_reaches_any_format() -> None:
    token = "ghp_" + "A" * 36
    old = BASE.read_text(encoding="utf-8")
    new = old.replace("    command: [mcp-issues]", f"    command: [mcp-issues, --token, {token}]")
    found = diff_plans(_plan(BASE), _plan_text(new), Settings())
    assert any(c.category == "runtime" for c in found.changes)
    for render in (text, markdown, json_output):
        assert token not in render(found)


def test_new_findings_are_counted_apart_from_privilege_growth() -> None:
    """A new finding is lint's verdict, not a privilege: the summary counts it on its own, and a
    change that only adds findings leaves privileges unchanged (--fail-on-growth still fails on it)."""
    found = _diff(CASES_DIR / "new-attack-path")
    assert text(found).splitlines()[-1] == "verdict: privileges grew (2 grew, 0 shrank, 0 neutral); 1 new finding, 1 new attack path"
    assert found.counts() == {"grew": 2, "shrank": 0, "neutral": 0}
    assert found.finding_counts()["findings"]["new"] == 1 and found.finding_counts()["attack-paths"]["new"] == 1
    assert "Lint findings, apart from privileges: 1 new finding, 1 new attack path." in markdown(found)
    only = Diff("old.yaml", "new.yaml", (Change("issues", "findings", "grew", "new finding: HR001 ...", None, "HR001"),))
    assert (only.verdict, only.grew) == ("privileges unchanged", True)
    assert text(only).splitlines()[-1] == "verdict: privileges unchanged; 1 new finding"
    resolved = Diff("old.yaml", "new.yaml", (Change("", "attack-paths", "shrank", "attack path closed: GR001 ...", "GR001", None),))
    assert verdict_line(resolved) == "verdict: privileges unchanged; 1 attack path closed"


def test_the_text_example_of_the_docs_is_what_diff_prints() -> None:
    docs = (REPO / "docs" / "diff.md").read_text(encoding="utf-8")
    shown = docs.split("### text", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert shown == (CASES_DIR / "new-attack-path" / "expected.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("example", sorted((REPO / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_an_example_rewritten_with_sorted_keys_and_no_anchors_is_no_change(example: Path, tmp_path: Path) -> None:
    """yaml.safe_dump sorts every key, expands every alias and drops comments: only the inline
    suppressions (comments) that the rewrite loses may show, as findings no longer waived."""
    import yaml

    rewritten = tmp_path / example.name
    rewritten.write_text(yaml.safe_dump(yaml.safe_load(example.read_text(encoding="utf-8")), sort_keys=True), encoding="utf-8")
    found = diff_plans(_plan(example), _plan(rewritten), Settings(), "bwrap")
    lost = [c for c in found.changes if c.message.startswith("finding no longer waived: ")]
    assert [c for c in found.changes if c not in lost] == []
    assert not lost or "mcpspec: ignore" in example.read_text(encoding="utf-8")


def test_a_revision_path_is_from_the_root_or_relative_with_dot_slash(repo: Path) -> None:
    sub = repo / "sub"
    sub.mkdir()
    (repo / "mcp-sandbox.yaml").rename(sub / "mcp-sandbox.yaml")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "moved")
    for source in ("git:HEAD:./mcp-sandbox.yaml", "git:HEAD:sub/mcp-sandbox.yaml"):
        result = run_cli("diff", source, "mcp-sandbox.yaml", cwd=sub)
        assert (result.returncode, result.stdout) == (0, "verdict: privileges unchanged\n"), result.stderr
    result = run_cli("diff", "git:HEAD:mcp-sandbox.yaml", "mcp-sandbox.yaml", cwd=sub)
    assert result.returncode == 2
    assert "write ./mcp-sandbox.yaml or sub/mcp-sandbox.yaml" in result.stderr


@pytest.mark.parametrize("target", ["bwrap", "systemd", "compose", "k8s"])
def test_every_example_against_the_risky_one_renders_in_every_format(target: str) -> None:
    risky = _plan(REPO / "examples" / "risky.yaml")
    for example in sorted((REPO / "examples").glob("*.yaml")):
        if example.name == "risky.yaml":
            continue
        found = diff_plans(_plan(example), risky, Settings(), target)
        assert found.grew, example.name
        assert len(markdown(found)) <= MARKDOWN_LIMIT
        data = json.loads(json_output(found))
        assert data["counts"]["grew"] == sum(1 for c in found.privileges if c.effect == "grew")
        counted = sum(n for kinds in data["findings"].values() for n in kinds.values())
        assert counted == len(found.changes) - len(found.privileges) > 0
        assert text(found).count("\n") == len(found.changes) + 1
        back = diff_plans(risky, _plan(example), Settings(), target)
        assert {c.effect for c in back.changes} >= {"shrank"}


def test_max_chars_caps_the_markdown_comment() -> None:
    old, new = str(REPO / "examples" / "coding-agent.yaml"), str(REPO / "examples" / "risky.yaml")
    whole = run_cli("diff", old, new, "-f", "markdown").stdout
    capped = run_cli("diff", old, new, "-f", "markdown", "--max-chars", "3000")
    assert len(whole) > 3000 >= len(capped.stdout) and "more changes are not shown" in capped.stdout
    refused = run_cli("diff", old, new, "--max-chars", "3000")
    assert refused.returncode == 2 and "--max-chars applies to the markdown format" in refused.stderr


def test_target_client_is_a_usage_error_naming_the_targets_to_use() -> None:
    """A client config's enforcement is its sandbox's: asking for it was an internal error."""
    case = CASES_DIR / "egress-added"
    result = run_cli("diff", str(case / "old.yaml"), str(case / "new.yaml"), "--target", "client")
    assert result.returncode == 2 and "give --target bwrap or compose" in result.stderr and "internal error" not in result.stderr
