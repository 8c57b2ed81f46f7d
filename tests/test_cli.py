from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO, run_cli
from mcpspec import __version__


def test_version_is_printed_by_the_fast_path_and_by_the_app() -> None:
    for args in (["--version"], ["-V"], ["--version", "schema"]):
        result = run_cli(*args)
        assert (result.returncode, result.stdout) == (0, f"mcpspec {__version__}\n"), args


def test_console_script_is_installed_next_to_the_interpreter() -> None:
    script = Path(sys.executable).parent / "mcpspec"
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert result.stdout == f"mcpspec {__version__}\n"


def test_clean_lint_prints_only_the_summary() -> None:
    result = run_cli("lint", "tests/corpus/clean.yaml")
    assert (result.returncode, result.stdout, result.stderr) == (0, "1 file checked: no problems.\n", "")


def test_spec_errors_exit_1_with_position_code_frame_and_summary() -> None:
    result = run_cli("lint", "tests/corpus/demo-broken.yaml", "tests/corpus/clean.yaml")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert re.match(r"tests/corpus/demo-broken\.yaml:\d+:\d+: SC001 unknown key 'idle_timout' in defaults\.lifecycle; did you mean 'idle_timeout'\?", lines[0])
    assert lines[1].lstrip().split(" | ", 1)[1].strip().startswith("idle_timout")
    assert set(lines[2].strip()) == {"^"}
    assert lines[-1].endswith("in 1 of 2 files.")
    assert "Traceback" not in result.stdout + result.stderr


def test_no_command_shows_help_and_bad_usage_exits_2() -> None:
    assert run_cli().returncode in (0, 2)
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_pre_commit_hook_runs_lint_on_sandbox_specs_only() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "mcpspec-lint"]
    assert hook["entry"] == "mcpspec lint"
    assert hook["language"] == "python"
    pattern = re.compile(hook["files"])
    for name in ("mcp-sandbox.yaml", "mcp-sandbox.yml", "deploy/mcp-sandbox.prod.yml", "mcp-sandbox-dev.yaml", "sub/dir/x.mcp-sandbox.yaml", "team.mcp-sandbox.yml"):
        assert pattern.search(name), name
    for name in ("docker-compose.yaml", "mcp-sandbox.yaml.bak", "my-mcp-sandbox.yaml", "sub/x-mcp-sandbox.yaml", "mcp-sandbox.lock", "mcp-sandbox.yaml/notes.txt"):
        assert not pattern.search(name), name


def test_lint_walks_directories_with_the_hook_pattern_and_the_docs_show_it() -> None:
    from mcpspec.source.discover import SKIPPED_DIRS, SPEC_FILE_PATTERN

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "mcpspec-lint"]
    assert hook["files"] == SPEC_FILE_PATTERN
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"`{SPEC_FILE_PATTERN}`" in readme
    section = readme.split("## Which files lint checks", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{name}`" in section for name in SKIPPED_DIRS if not name.endswith("_cache")), "a skipped folder is not documented"


def test_every_command_help_names_values_not_python_types() -> None:
    from typer.main import get_command
    from typer.testing import CliRunner

    from mcpspec.cli import app

    group = get_command(app)
    names = list(group.commands)  # type: ignore[attr-defined]
    assert {"lint", "build", "verify", "lock"} <= set(names)
    runner = CliRunner()
    for name in names:
        shown = runner.invoke(app, [name, "--help"], prog_name="mcpspec", terminal_width=200)
        assert shown.exit_code == 0, name
        assert not re.search(r"<(list\[|path|str|int|float|bool|text|choice)", shown.output, re.IGNORECASE), f"{name} --help shows a type name:\n{shown.output}"
        assert "{" not in shown.output.splitlines()[0], shown.output.splitlines()[0]
    lint_help = runner.invoke(app, ["lint", "--help"], prog_name="mcpspec", terminal_width=200).output
    assert "Usage: mcpspec lint [OPTIONS] PATH..." in lint_help
    assert "--format FORMAT" in lint_help and "--output FILE" in lint_help and "--color WHEN" in lint_help
