"""The thin CLI: options from config and flags in one place, for every command that reads a spec."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO, run_cli

CODING = REPO / "examples" / "coding-agent.yaml"


def _manifest_rules(out: Path) -> set[str]:
    return {f["rule"] for f in json.loads((out / ".mcpspec-build.json").read_text())["findings"]}


def test_config_ignore_of_a_target_rule_takes_effect_in_build(tmp_path: Path) -> None:
    plain = run_cli("build", str(CODING), "--target", "bwrap", "--out", str(tmp_path / "plain"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "TG003" in plain.stderr and _manifest_rules(tmp_path / "plain") == {"TG002", "TG003"}
    (tmp_path / ".mcpspec.yaml").write_text("ignore: [TG003]\n")
    found = run_cli("build", str(CODING), "--target", "bwrap", "--out", str(tmp_path / "found"), cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert "TG003" not in found.stderr and "TG002" in found.stderr
    assert _manifest_rules(tmp_path / "found") == {"TG002"}
