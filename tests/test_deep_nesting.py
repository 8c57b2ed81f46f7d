"""Every file mcpspec reads refuses nesting deeper than Python's parsers recurse, with its own
error naming the file: never "internal error: RecursionError". Found after fuzzing: a
baseline, a lock, a build manifest, a pyproject.toml config and a codex config nested
100,000 deep each ended the command with a traceback."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, run_cli

DEPTH = 100_000
DEEP_JSON = "[" * DEPTH + "]" * DEPTH
SPEC = REPO / "examples" / "coding-agent.yaml"


def _spec_in(tmp_path: Path) -> Path:
    spec = tmp_path / "mcp-sandbox.yaml"
    shutil.copy(SPEC, spec)
    return spec


def _refused(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    out = done.stdout + done.stderr
    assert "internal error" not in out and "Traceback" not in out, out
    assert all(text in out for text in expected), out


def test_a_deep_baseline(tmp_path: Path) -> None:
    spec = _spec_in(tmp_path)
    (tmp_path / "baseline.json").write_text(DEEP_JSON, encoding="utf-8")
    done = run_cli("lint", str(spec), "--baseline", str(tmp_path / "baseline.json"))
    assert done.returncode == 2
    _refused(done, "baseline.json: not a valid mcpspec baseline: nested too deeply")


def test_a_deep_lock_is_a_finding_of_lint(tmp_path: Path) -> None:
    spec = _spec_in(tmp_path)
    (tmp_path / "mcp-sandbox.lock").write_text(DEEP_JSON, encoding="utf-8")
    done = run_cli("lint", str(spec), "--select", "TS008")
    _refused(done, "mcp-sandbox.lock:1:1: not JSON: nested too deeply")


def test_a_deep_build_manifest_is_no_manifest(tmp_path: Path) -> None:
    spec = _spec_in(tmp_path)
    out = tmp_path / "out"
    assert run_cli("build", str(spec), "--target", "bwrap", "--out", str(out)).returncode == 0
    (out / ".mcpspec-build.json").write_text(DEEP_JSON, encoding="utf-8")
    done = run_cli("build", str(spec), "--target", "bwrap", "--out", str(out))
    assert done.returncode == 0
    _refused(done, "built")


def test_a_deep_pyproject_config(tmp_path: Path) -> None:
    spec = _spec_in(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.mcpspec]\nselect = " + DEEP_JSON + "\n", encoding="utf-8")
    done = run_cli("lint", str(spec), cwd=tmp_path)
    assert done.returncode == 2
    _refused(done, "pyproject.toml: cannot read config: nested too deeply")


@pytest.mark.parametrize(("name", "client", "text"), [
    ("config.toml", "codex", "a = " + DEEP_JSON + "\n"),
    ("mcp.json", "claude-code", DEEP_JSON),
    ("config.yaml", "continue", "a: " + DEEP_JSON + "\n"),
])
def test_a_deep_client_config(tmp_path: Path, name: str, client: str, text: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = run_cli("import", "--from", client, str(tmp_path / name))
    assert done.returncode == 2
    _refused(done, f"{name}:", "not valid")


def test_a_deep_spec(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text("version: 1\nservers: " + DEEP_JSON + "\n", encoding="utf-8")
    done = run_cli("lint", str(spec))
    assert done.returncode == 1
    _refused(done, "YM006")
