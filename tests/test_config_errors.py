"""Config-file problems are positioned FILE:LINE:COL and suggest what was meant, as spec errors do."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli
from mcpspec.config import ConfigError, load_config


def problems(path: Path, text: str) -> list[str]:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value).splitlines()


def test_a_misspelt_key_is_positioned_and_suggests_the_key(tmp_path: Path) -> None:
    config = tmp_path / ".mcpspec.yaml"
    (line,) = problems(config, "# team config\nfail-on: high\nselectt: [FS004]\n")
    assert line.startswith(f"{config}:3:1: unknown key 'selectt'; did you mean 'select'? (keys: select, ignore, ")
    (line,) = problems(config, "per_file_ignore: {}\n")
    assert line.startswith(f"{config}:1:1: unknown key 'per_file_ignore'; did you mean 'per-file-ignores'?")


def test_a_value_out_of_its_set_points_at_the_value_and_suggests(tmp_path: Path) -> None:
    config = tmp_path / ".mcpspec.yml"
    lines = problems(config, "fail-on: hgih\nseverity:\n  FS004: meduim\nper-file-ignores:\n  \"x.yaml\": NW001\n")
    assert lines == [
        f"{config}:1:10: fail-on: 'hgih' is not one of critical, high, medium, low, info, never; did you mean 'high'?",
        f"{config}:3:10: severity.FS004: 'meduim' is not one of critical, high, medium, low, info; did you mean 'medium'?",
        f"{config}:5:13: per-file-ignores[\"x.yaml\"]: input should be a valid list",
    ]


def test_an_unknown_rule_is_positioned_and_suggests_the_rule(tmp_path: Path) -> None:
    config = tmp_path / ".mcpspec.yaml"
    lines = problems(config, "select: [FS004, FS0044]\nignore:\n  - credential-path-mountd\nseverity: {fs0044: high}\nper-file-ignores: {\"*.yaml\": [NW01]}\n")
    assert lines == [
        f"{config}:1:17: select[1]: no rule is named 'FS0044'; did you mean 'FS004'? (see `mcpspec rules`)",
        f"{config}:3:5: ignore[0]: no rule is named 'credential-path-mountd'; did you mean 'credential-path-mounted'? (see `mcpspec rules`)",
        f"{config}:4:12: severity.fs0044: no rule is named 'fs0044'; did you mean 'FS004'? (see `mcpspec rules`)",
        f"{config}:5:31: per-file-ignores[\"*.yaml\"][0]: no rule is named 'NW01'; did you mean 'NW001'? (see `mcpspec rules`)",
    ]


def test_pyproject_problems_are_positioned_in_the_tool_table(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    text = '[project]\nname = "x"\nselectt = 1\n\n[tool.mcpspec]\nselectt = ["FS"]\nseverity = {FS004 = "hgh"}\n'
    assert problems(config, text) == [
        f"{config}:6:1: unknown key 'selectt'; did you mean 'select'? (keys: select, ignore, severity, fail-on, per-file-ignores, baseline, "
        "no-inline-suppressions, docs-url, approver, approver-timeout, within)",
        f"{config}:7:13: severity.FS004: 'hgh' is not one of critical, high, medium, low, info; did you mean 'high'?",
    ]
    text = '[tool.mcpspec]\nignore = ["SE001",\n  "FS0044"]\n\n[tool.mcpspec.per-file-ignores]\n"*.yaml" = ["NW01"]\n'
    assert problems(config, text) == [
        f"{config}:3:3: ignore[1]: no rule is named 'FS0044'; did you mean 'FS004'? (see `mcpspec rules`)",
        f"{config}:6:13: per-file-ignores[\"*.yaml\"][0]: no rule is named 'NW01'; did you mean 'NW001'? (see `mcpspec rules`)",
    ]


def test_other_config_problems_are_positioned_too(tmp_path: Path) -> None:
    config = tmp_path / ".mcpspec.yaml"
    assert problems(config, "- select\n") == [f"{config}:1:1: a config is a mapping of keys such as select, ignore, fail-on"]
    assert problems(config, "approver: \"a 'b\"\n") == [f"{config}:1:11: approver: No closing quotation"]
    (line,) = problems(config, "select: [FS]\ndocs-url: docs/rules\n")
    assert line.startswith(f"{config}:2:11: docs-url: 'docs/rules' is not an absolute http(s) URL")


def test_lint_prints_the_positioned_config_error_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "mcp-sandbox.yaml").write_text("version: 1\nproject: p\nservers: {a: {command: [x]}}\n", encoding="utf-8")
    (tmp_path / ".mcpspec.yaml").write_text("selectt: [FS004]\n", encoding="utf-8")
    result = run_cli("lint", "mcp-sandbox.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"mcpspec: error: {tmp_path / '.mcpspec.yaml'}:1:1: unknown key 'selectt'; did you mean 'select'?")
    assert "Traceback" not in result.stderr
