"""docs/boundary.md stays true: its worked boundary is the committed file, the output it shows is
what check prints, the fix it names makes the check pass, and the pre-commit hook it names exists."""

from __future__ import annotations

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
    (shown,) = [block for block in re.findall(r"```text\n(.*?)```", DOC, re.DOTALL) if block.startswith("$ mcpspec check")]
    command, *lines = shown.splitlines()
    found = run_cli(*command.removeprefix("$ mcpspec ").split())
    assert found.returncode == 1 and found.stdout.splitlines() == lines
    spec = (REPO / "examples" / "coding-agent.yaml").read_text(encoding="utf-8")
    fixed = spec.replace("  process: {allow: [], listeners: false, background: {allowed: false}}", "  process: {allow: [], deny: [curl, wget, ssh, scp, nc, sudo], listeners: false, background: {allowed: false}, max_runtime: 10m}")
    fixed = fixed.replace("    placement: agent ", "    placement: dedicated ")
    assert fixed != spec and "placement: agent" not in fixed
    (tmp_path / "coding-agent.yaml").write_text(fixed, encoding="utf-8")
    assert run_cli("check", str(tmp_path / "coding-agent.yaml"), "--within", str(REPO / BOUNDARY)).returncode == 0


def test_the_check_hook_selects_the_files_lint_does() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert hooks["mcpspec-check"]["entry"] == "mcpspec check"
    assert hooks["mcpspec-check"]["files"] == hooks["mcpspec-lint"]["files"]
    assert "id: mcpspec-check" in DOC
