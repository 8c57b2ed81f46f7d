"""docs/boundary.md stays true: its worked boundary is the committed file, the output it shows is
what check prints, the fix it names makes the check pass, and the pre-commit hook it names exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from conftest import REPO, run_cli

DOC = (REPO / "docs" / "boundary.md").read_text(encoding="utf-8")
BOUNDARY = "docs/boundary/acme-org.yaml"


def test_the_worked_boundary_is_the_committed_file_and_lints() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC, re.DOTALL)
    assert (REPO / BOUNDARY).read_text(encoding="utf-8") in blocks
    assert run_cli("lint", BOUNDARY, "--fail-on", "never").returncode == 0


def test_the_output_shown_is_what_check_prints_and_the_fix_passes(tmp_path: Path) -> None:
    shown = [block for block in re.findall(r"```text\n(.*?)```", DOC, re.DOTALL) if block.startswith("$ mcpspec check")]
    assert len(shown) >= 2
    for block in shown:
        command, *lines = block.splitlines()
        found = run_cli(*command.removeprefix("$ mcpspec ").split())
        assert found.returncode == 1 and found.stdout.splitlines() == lines, command
    spec = (REPO / "examples" / "coding-agent.yaml").read_text(encoding="utf-8")
    fixed = within_acme(spec)
    (tmp_path / "coding-agent.yaml").write_text(fixed, encoding="utf-8")
    assert run_cli("check", str(tmp_path / "coding-agent.yaml"), "--within", str(REPO / BOUNDARY)).returncode == 0


def test_the_argument_rule_example_is_the_corpus_output() -> None:
    (example,) = [block for block in re.findall(r"```text\n(.*?)```", DOC, re.DOTALL) if " BX012 " in block]
    assert example in (REPO / "tests" / "data" / "boundary" / "when-allow-first" / "expected.txt").read_text(encoding="utf-8")


def test_every_code_is_in_the_table() -> None:
    from mcpspec.boundary.check import KINDS

    rows = [line for line in DOC.splitlines() if line.startswith("| ")]
    assert all(any(line.endswith(f"| {code} |") for line in rows) for code in KINDS if code != "BX000")


def test_the_check_hook_selects_the_files_lint_does() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert hooks["mcpspec-check"]["entry"] == "mcpspec check"
    assert hooks["mcpspec-check"]["files"] == hooks["mcpspec-lint"]["files"]
    assert "id: mcpspec-check" in DOC


def test_explain_knows_every_excess_code_and_slug() -> None:
    from mcpspec.boundary.check import KINDS

    for code, (slug, summary) in KINDS.items():
        for name in (code, slug):
            found = run_cli("explain", name)
            assert found.returncode == 0 and found.stdout.startswith(f"{code} {slug}\n") and summary in found.stdout, name
    assert run_cli("explain", "BX999").returncode == 2


def test_the_counts_the_page_gives_for_the_other_examples_are_what_check_finds() -> None:
    said = re.search(r"\(`data-connector`, `deploy-tool`, `package-analysis`\) exceed it by (\d+), (\d+)\s+and (\d+).*?by more than (\d+)", DOC, re.DOTALL)
    assert said is not None
    found = run_cli("check", "examples/data-connector.yaml", "examples/deploy-tool.yaml", "examples/package-analysis.yaml", "examples/risky.yaml", "--within", BOUNDARY, "-f", "json")
    counts: dict[str, int] = {}
    for row in json.loads(found.stdout)["excesses"]:
        counts[row["file"]] = counts.get(row["file"], 0) + 1
    assert [counts[f"examples/{name}.yaml"] for name in ("data-connector", "deploy-tool", "package-analysis")] == [int(n) for n in said.groups()[:3]]
    assert counts["examples/risky.yaml"] > int(said.group(4))


def within_acme(spec: str) -> str:
    """The coding agent example, fixed as the doc says, so that it stays within the worked boundary."""
    limitless = "  process: {allow: [], listeners: false, background: {allowed: false}}"
    fixed = spec.replace(limitless, "  process: {allow: [], deny: [curl, wget, ssh, scp, nc, sudo], listeners: false, background: {allowed: false}, max_runtime: 10m}")
    fixed = fixed.replace("        approval: per-session\n", "        approval: always\n")
    fixed = fixed.replace("    placement: agent ", "    placement: dedicated ")
    assert fixed.count("approval: always") == spec.count("approval: always") + 2 and "placement: agent" not in fixed and limitless not in fixed
    return fixed
