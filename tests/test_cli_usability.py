"""What a new user meets first at the command line: -h, shell completion, usage errors that exit 2,
and a line on stderr saying what a command wrote to its --output file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli

EXAMPLE = "examples/coding-agent.yaml"
BIN = Path(sys.executable).parent


def test_h_is_help_for_the_tool_and_every_command() -> None:
    from typer.main import get_command
    from typer.testing import CliRunner

    from mcpspec.cli import app

    runner = CliRunner()
    for args in ([], *([name] for name in get_command(app).commands)):  # type: ignore[attr-defined]
        short = runner.invoke(app, [*args, "-h"], prog_name="mcpspec", terminal_width=200)
        long = runner.invoke(app, [*args, "--help"], prog_name="mcpspec", terminal_width=200)
        assert (short.exit_code, short.output) == (0, long.output), args
        assert "-h, --help" in short.output, args
    assert run_cli("-h").returncode == 0  # through the entry point too


def _completion(shell: str, env: dict[str, str]) -> str:
    """What the mcpspec console script answers to a completion request of ``shell``."""
    environment = {**os.environ, **env, "_MCPSPEC_COMPLETE": f"complete_{shell}"}
    done = subprocess.run([str(BIN / "mcpspec")], env=environment, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_completion_answers_bash_zsh_and_fish() -> None:
    assert "--format" in _completion("zsh", {"_TYPER_COMPLETE_ARGS": "mcpspec lint --fo"})
    assert _completion("fish", {"_TYPER_COMPLETE_FISH_ACTION": "get-args", "_TYPER_COMPLETE_ARGS": "mcpspec bu"}).startswith("build\t")
    for shell in ("bash", "zsh", "fish"):
        script = subprocess.run([str(BIN / "mcpspec")], env={**os.environ, "_MCPSPEC_COMPLETE": f"source_{shell}"}, capture_output=True, text=True, timeout=60, check=True)
        assert "_MCPSPEC_COMPLETE=complete_" + shell in script.stdout, shell


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_documented_bash_line_completes_commands_and_options_in_bash() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = 'eval "$(_MCPSPEC_COMPLETE=source_bash mcpspec)"'
    assert line in readme
    script = line + '\nCOMP_WORDS=(mcpspec li); COMP_CWORD=1; _mcpspec_completion mcpspec; echo "${COMPREPLY[*]}"\n'
    script += 'COMP_WORDS=(mcpspec build x --tar); COMP_CWORD=3; _mcpspec_completion mcpspec; echo "${COMPREPLY[*]}"\n'
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "--norc", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == ["lint", "--target"], done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", EXAMPLE, "nosuch"], "no server named 'nosuch'"),
        (["run", EXAMPLE, "repo", "--agent", "nosuch"], "no agent named 'nosuch' uses this server (it serves: coder)"),
        (["run", EXAMPLE, "repo", "--run-id", "a b"], "--run-id 'a b' must match"),
        (["lock", EXAMPLE, "nosuch"], "no server named 'nosuch'"),
        (["verify", EXAMPLE, "nosuch"], "no server named 'nosuch'"),
        (["build", EXAMPLE, "--target", "nosuch"], "unknown target 'nosuch'"),
        (["report", EXAMPLE, "--target", "nosuch"], "unknown target 'nosuch'"),
        (["diff", EXAMPLE, EXAMPLE, "--target", "nosuch"], "unknown target 'nosuch'"),
        (["graph", EXAMPLE, "--format", "nosuch"], "unknown format 'nosuch'"),
        (["lint", "nosuch.yaml"], "nosuch.yaml: no such file"),
        (["explain", "nosuch"], "no rule is named 'nosuch'"),
        (["import", "--from", "nosuch", "tests/clients/cursor-mcp.json"], "unknown client 'nosuch'"),
    ],
)
def test_usage_errors_exit_2_with_one_message(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "written"),
    [
        (["report", EXAMPLE, "--exit-zero", "-o", "out.html"], "wrote the html report to out.html ("),
        (["report", EXAMPLE, "--exit-zero", "-o", "out.md"], "wrote the markdown report to out.md ("),
        (["graph", EXAMPLE, "-o", "out.dot"], "wrote the dot trust graph to out.dot ("),
        (["plan", EXAMPLE, "-o", "out.json"], "wrote the json plan to out.json ("),
        (["diff", EXAMPLE, EXAMPLE, "-o", "out.txt"], "wrote the text diff to out.txt ("),
    ],
)
def test_an_output_file_is_named_on_stderr(args: list[str], written: str, tmp_path: Path) -> None:
    result = run_cli(*[str(REPO / a) if a == EXAMPLE else a for a in args], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    name = args[-1]
    size = (tmp_path / name).stat().st_size
    assert result.stderr == f"{written}{size:,} bytes)\n"


def test_a_failing_report_says_why_it_exits_1(tmp_path: Path) -> None:
    result = run_cli("report", str(REPO / "examples" / "risky.yaml"), "-o", "out.html", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == "mcpspec: exit 1: the report shows findings at or above --fail-on low (--exit-zero to exit 0)"


def test_lint_of_the_examples_directory_checks_every_example() -> None:
    result = run_cli("lint", "examples/", "--format", "json", "--exit-zero")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["summary"]["files"] == len(list((REPO / "examples").glob("*.yaml"))) == 8


def test_a_directory_yields_specs_by_name_by_modeline_or_by_their_top_level_keys(tmp_path: Path) -> None:
    from mcpspec.source.discover import walk

    spec = "version: 1\nproject: p\nservers: {a: {command: [x]}}\n"
    files = {
        "mcp-sandbox.yaml": "{}\n",  # by name, whatever it holds
        "agents.yaml": "# yaml-language-server: $schema=https://mcpspec.dev/schema/1/mcp-sandbox.schema.json\n{}\n",
        "sub/dev.yml": "# team sandbox\n" + spec,
        "docker-compose.yaml": "version: '3'\nservices: {a: {image: x}}\n",
        "ci.yml": "on: push\njobs: {}\n",
        "nested.yaml": "x:\n  version: 1\n  project: p\n  servers: {}\n",  # not at the top level
        "late-modeline.yaml": "a: 1\n" * 5 + "# yaml-language-server: $schema=../schemas/mcp-sandbox.schema.json\n",
        "notes.txt": spec,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in walk(tmp_path)] == ["agents.yaml", "mcp-sandbox.yaml", "sub/dev.yml"]


def test_linting_a_client_config_is_one_error_that_names_the_client_and_import() -> None:
    clients = sorted(p for p in (REPO / "tests" / "clients").iterdir() if p.suffix in (".json", ".toml", ".yaml"))
    assert len(clients) >= 13  # every fixture, the realistic ones included
    result = run_cli("lint", "--format", "json", *[str(p.relative_to(REPO)) for p in clients])
    assert result.returncode == 1, result.stderr
    found = json.loads(result.stdout)["results"]
    assert [(r["file"], r["code"], r["severity"]) for r in found] == [(str(p.relative_to(REPO)), "SC007", "error") for p in clients]
    for item in found:
        assert re.fullmatch(r"this looks like a [a-z-]+ config, not a sandbox spec: run `mcpspec import --from auto \S+` to write a spec for its \d+ servers", item["message"]), item
    named = {r["file"].rsplit("/", 1)[1]: r["message"].split()[4] for r in found}
    assert (named["claude_desktop_config.json"], named["vscode-mcp.json"], named["codex-config.toml"]) == ("claude-desktop", "vscode", "codex")


def test_a_broken_spec_written_as_json_keeps_its_own_errors(tmp_path: Path) -> None:
    spec = tmp_path / "mcp.json"
    spec.write_text('{"version": 1, "servers": {"a": {"comand": ["x"]}}}\n', encoding="utf-8")
    result = run_cli("lint", "--format", "json", str(spec))
    assert sorted(r["code"] for r in json.loads(result.stdout)["results"]) == ["SC001", "SC002"]
