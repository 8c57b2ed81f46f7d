"""What users of ruff, yamllint and hadolint expect of `mcpspec lint`: directories, standard
input, --quiet, --color, --statistics, SARIF beside the summary, baselines that refuse bad specs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
BROKEN = "version: 1\nproject: p\nservers: {a: {comand: [x]}}\n"


def lint(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    drop = {"GITHUB_ACTIONS", "NO_COLOR", "FORCE_COLOR"}
    environment = {k: v for k, v in os.environ.items() if k not in drop} | (env or {})
    return subprocess.run([sys.executable, "-m", "mcpspec", "lint", *args], cwd=cwd, capture_output=True, text=True, env=environment,
                          input=stdin, timeout=60, check=False)


def files_of(result: subprocess.CompletedProcess[str]) -> set[str]:
    return {r["file"] for r in json.loads(result.stdout)["results"]}


def _write(path: Path, text: str = SPEC) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_directory_is_walked_for_spec_files_by_the_hook_pattern(tmp_path: Path) -> None:
    for name in ("mcp-sandbox.yaml", "sub/dir/x.mcp-sandbox.yaml", "deploy/mcp-sandbox.prod.yml",
                 ".git/mcp-sandbox.yaml", ".venv/lib/mcp-sandbox.yaml", "node_modules/pkg/mcp-sandbox.yaml",
                 "other.yaml", "my-mcp-sandbox.yaml"):
        _write(tmp_path / name)
    result = lint(".", "--select", "FS004", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert files_of(result) == {"mcp-sandbox.yaml", "sub/dir/x.mcp-sandbox.yaml", "deploy/mcp-sandbox.prod.yml"}
    assert json.loads(result.stdout)["summary"]["files"] == 3
    # A file named on the command line is checked whatever its name, and only once.
    named = lint(".", "other.yaml", "mcp-sandbox.yaml", "--select", "FS004", "--format", "json", cwd=tmp_path)
    assert json.loads(named.stdout)["summary"]["files"] == 4


def test_a_directory_without_spec_files_is_a_usage_error(tmp_path: Path) -> None:
    _write(tmp_path / "compose.yaml")
    result = lint(".", cwd=tmp_path)
    assert result.returncode == 2
    assert "no spec files in this directory" in result.stderr and "mcp-sandbox" in result.stderr
    assert "Traceback" not in result.stderr


def test_dash_reads_standard_input_shown_as_stdin(tmp_path: Path) -> None:
    result = lint("-", "--select", "FS004", cwd=tmp_path, stdin=SPEC)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("<stdin>:7:44: FS004 [medium] ")
    assert result.stdout.splitlines()[1].startswith("  7 |")
    broken = lint("-", cwd=tmp_path, stdin=BROKEN)
    assert broken.returncode == 1 and broken.stdout.startswith("<stdin>:3:15: SC001 unknown key 'comand'")
    twice = lint("-", "-", cwd=tmp_path, stdin=SPEC)
    assert twice.returncode == 2 and "more than once" in twice.stderr
    bom = subprocess.run([sys.executable, "-m", "mcpspec", "lint", "-"], cwd=tmp_path, input=b"\xef\xbb\xbf" + SPEC.encode(), capture_output=True, timeout=60, check=False)
    assert bom.returncode == 1 and bom.stdout.startswith(b"<stdin>:1:1: YM009 ")


@pytest.mark.parametrize("name", ["mcp-sandbox.yaml", "sub/dir/x.mcp-sandbox.yaml"])
def test_the_walker_and_the_hook_pattern_agree_on_a_name(name: str) -> None:
    import re

    import yaml

    from conftest import REPO
    from mcpspec.source.discover import is_spec_file

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert is_spec_file(name) and re.search(hooks[0]["files"], name)
