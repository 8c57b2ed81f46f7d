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
                 ".git/mcp-sandbox.yaml", ".venv/lib/mcp-sandbox.yaml", "node_modules/pkg/mcp-sandbox.yaml"):
        _write(tmp_path / name)
    for name in ("other.yaml", "my-mcp-sandbox.yaml"):  # neither the name nor the text of a spec
        _write(tmp_path / name, SPEC.replace("servers:", "services:"))
    result = lint(".", "--select", "FS004", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert files_of(result) == {"mcp-sandbox.yaml", "sub/dir/x.mcp-sandbox.yaml", "deploy/mcp-sandbox.prod.yml"}
    assert json.loads(result.stdout)["summary"]["files"] == 3
    # A file named on the command line is checked whatever its name, and only once.
    named = lint(".", "other.yaml", "mcp-sandbox.yaml", "--select", "FS004", "--format", "json", cwd=tmp_path)
    assert json.loads(named.stdout)["summary"]["files"] == 4


def test_a_directory_without_spec_files_is_a_usage_error(tmp_path: Path) -> None:
    _write(tmp_path / "compose.yaml", "services:\n  web: {image: nginx}\n")
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


def test_quiet_prints_the_findings_without_the_summary(tmp_path: Path) -> None:
    spec = _write(tmp_path / "mcp-sandbox.yaml")
    loud = lint(spec.name, "--select", "FS004", cwd=tmp_path)
    quiet = lint(spec.name, "--select", "FS004", "--quiet", cwd=tmp_path)
    assert quiet.returncode == loud.returncode == 1
    assert quiet.stdout == loud.stdout.removesuffix("2 problems (2 medium) in 1 of 1 file.\n") and quiet.stdout.startswith("mcp-sandbox.yaml:7:44: FS004")
    clean = lint(spec.name, "--select", "SU001", "-q", cwd=tmp_path)
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")


@pytest.mark.parametrize(("option", "env", "coloured"), [
    ("auto", {}, False),  # not a terminal
    ("auto", {"FORCE_COLOR": "1"}, True),
    ("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins, as in CPython
    ("auto", {"FORCE_COLOR": "1", "NO_COLOR": ""}, True),  # an empty NO_COLOR means nothing (no-color.org)
    ("always", {"NO_COLOR": "1"}, True),
    ("never", {"FORCE_COLOR": "1"}, False),
])
def test_color_follows_the_option_then_no_color_and_force_color(tmp_path: Path, option: str, env: dict[str, str], coloured: bool) -> None:
    spec = _write(tmp_path / "mcp-sandbox.yaml")
    result = lint(spec.name, "--select", "FS004", "--color", option, cwd=tmp_path, env=env)
    assert result.returncode == 1
    assert ("\x1b[33m[medium]\x1b[0m" in result.stdout) is coloured
    assert "\x1b[" in result.stdout or not coloured


def test_color_takes_three_words_only(tmp_path: Path) -> None:
    result = lint(_write(tmp_path / "mcp-sandbox.yaml").name, "--color", "yes", cwd=tmp_path)
    assert result.returncode == 2 and "--color must be one of auto, always, never" in result.stderr


def test_statistics_count_the_findings_per_rule(tmp_path: Path) -> None:
    spec = _write(tmp_path / "mcp-sandbox.yaml")
    result = lint(spec.name, "--select", "FS004,LC", "--statistics", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "2  FS004  [medium]    writable-mount-read-only-tools",
        "1  LC001  [medium]    no-idle-timeout",
        "1  LC002  [medium]    no-max-lifetime",
        "4 problems (4 medium) in 1 of 1 file.",
    ]
    assert lint(spec.name, "--select", "FS004", "--statistics", "-q", cwd=tmp_path).stdout == "2  FS004  [medium]    writable-mount-read-only-tools\n"
    _write(tmp_path / "b.mcp-sandbox.yaml", BROKEN)
    both = lint(".", "--select", "FS004", "--statistics", cwd=tmp_path)
    assert both.stdout.splitlines()[:2] == ["2  FS004  [medium]    writable-mount-read-only-tools", "1  SC001  [error]     unknown-key"]
    refused = lint(spec.name, "--statistics", "-f", "json", cwd=tmp_path)
    assert refused.returncode == 2 and "--statistics prints text" in refused.stderr


def test_carets_stay_under_a_value_after_a_masked_secret_and_end_at_the_end_of_the_line(tmp_path: Path) -> None:
    text = SPEC.replace("command: [mcp-files]", "command: [mcp-files, --token, ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]")
    spec = _write(tmp_path / "mcp-sandbox.yaml", text)
    lines = lint(spec.name, "--select", "SE001", cwd=tmp_path).stdout.splitlines()
    assert lines[1] == "  5 |     command: [mcp-files, --token, ghp_****]"
    assert lines[2] == "  " + " " * len("5 |     command: [mcp-files, --token, ") + "^" * len("ghp_****")
    assert "aaaa" not in "".join(lines)


def test_a_frame_never_runs_past_its_line() -> None:
    from mcpspec.diagnostics import Span
    from mcpspec.report.text import _frame

    def carets(span: Span, line: str) -> tuple[int, int]:
        _shown, under = _frame(span, [line, "next: line"])
        return under.index("^") - 2 - len("1 | "), under.count("^")

    assert carets(Span(1, 1, 1, 99), "key: value") == (0, 10)  # an end past the line is cut at its end
    assert carets(Span(1, 6, 2, 3), "key: value") == (5, 5)  # several lines: to the end of the first
    assert carets(Span(1, 30, 1, 31), "key: value") == (10, 1)  # a place past the end: one caret just after it
    assert carets(Span(1, 5, 1, 7), "名前: ab") == (6, 2)  # wide characters take two columns
    text = "a: [ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, later]"
    assert carets(Span(1, 47, 1, 52), text) == (len("a: [ghp_****, "), 5)


def test_sarif_to_a_file_alone_still_prints_the_summary(tmp_path: Path) -> None:
    spec = _write(tmp_path / "mcp-sandbox.yaml")
    result = lint(spec.name, "--select", "FS004", "-f", "sarif", "-o", "x.sarif", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (1, "2 problems (2 medium) in 1 of 1 file.\n", "")
    assert len(json.loads((tmp_path / "x.sarif").read_text(encoding="utf-8"))["runs"][0]["results"]) == 2
    quiet = lint(spec.name, "--select", "FS004", "-f", "sarif", "-o", "q.sarif", "-q", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout) == (1, "") and (tmp_path / "q.sarif").is_file()
    paired = lint(spec.name, "--select", "FS004", "-f", "sarif", "-o", "y.sarif", "-f", "text", cwd=tmp_path)
    assert paired.stdout.startswith("mcp-sandbox.yaml:7:44: FS004 [medium]") and paired.stdout.endswith("2 problems (2 medium) in 1 of 1 file.\n")
    assert json.loads((tmp_path / "y.sarif").read_text(encoding="utf-8")) == json.loads((tmp_path / "x.sarif").read_text(encoding="utf-8"))
    piped = lint(spec.name, "--select", "FS004", "-f", "sarif", "-o", "z.sarif", "-f", "json", cwd=tmp_path)
    assert json.loads(piped.stdout)["summary"]["problems"] == 2  # stdout holds the json alone
    unwritable = lint(spec.name, "-f", "sarif", "-o", "missing/dir/x.sarif", cwd=tmp_path)
    assert unwritable.returncode == 2 and "cannot write missing/dir/x.sarif" in unwritable.stderr and "Traceback" not in unwritable.stderr


def _help_uris(log: dict[str, object]) -> dict[str, str]:
    runs = log["runs"]
    assert isinstance(runs, list)
    return {rule["id"]: rule["helpUri"] for rule in runs[0]["tool"]["driver"]["rules"] if "helpUri" in rule}


def test_sarif_help_uri_is_an_absolute_url_with_a_configurable_base(tmp_path: Path) -> None:
    from urllib.parse import urlsplit

    from jsonschema import Draft7Validator

    from conftest import REPO, SARIF_SCHEMA

    validator = Draft7Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    spec = _write(tmp_path / "mcp-sandbox.yaml")
    default = json.loads(lint(spec.name, "--select", "FS004,LC", "-f", "sarif", cwd=tmp_path).stdout)
    assert not list(validator.iter_errors(default))
    uris = _help_uris(default)
    assert set(uris) == {"FS004", "LC001", "LC002"}
    for code, uri in uris.items():
        parts = urlsplit(uri)
        assert parts.scheme == "https" and parts.netloc, uri
        page = parts.path.rsplit("/", 1)[1]
        assert page.startswith(code + "-") and (REPO / "docs" / "rules" / page).is_file(), uri
    flag = json.loads(lint(spec.name, "--select", "FS004", "-f", "sarif", "--docs-url", "https://git.acme.example/mcpspec/blob/v1/docs/rules", cwd=tmp_path).stdout)
    assert _help_uris(flag) == {"FS004": "https://git.acme.example/mcpspec/blob/v1/docs/rules/FS004-writable-mount-read-only-tools.md"}
    assert not list(validator.iter_errors(flag))
    (tmp_path / ".mcpspec.yaml").write_text("docs-url: https://docs.acme.example/rules/\n", encoding="utf-8")
    configured = json.loads(lint(spec.name, "--select", "FS004", "-f", "sarif", cwd=tmp_path).stdout)
    assert _help_uris(configured)["FS004"] == "https://docs.acme.example/rules/FS004-writable-mount-read-only-tools.md"
    relative = lint(spec.name, "--docs-url", "docs/rules/", cwd=tmp_path)
    assert relative.returncode == 2 and "not an absolute http(s) URL" in relative.stderr
    (tmp_path / ".mcpspec.yaml").write_text("docs-url: file:///srv/rules/\n", encoding="utf-8")
    bad = lint(spec.name, cwd=tmp_path)
    assert bad.returncode == 2 and ".mcpspec.yaml" in bad.stderr and "docs-url" in bad.stderr


def test_write_baseline_refuses_a_spec_with_errors_and_writes_nothing(tmp_path: Path) -> None:
    _write(tmp_path / "mcp-sandbox.yaml")
    _write(tmp_path / "b.mcp-sandbox.yaml", BROKEN)
    result = lint(".", "--select", "FS004", "--write-baseline", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("b.mcp-sandbox.yaml:3:15: SC001 unknown key 'comand'") and "FS004" not in result.stdout
    assert "not writing the baseline" in result.stderr
    assert not (tmp_path / ".mcpspec-baseline.json").exists()
    # An existing baseline is left as it was.
    assert lint("mcp-sandbox.yaml", "--select", "FS004", "--write-baseline", cwd=tmp_path).returncode == 0
    before = (tmp_path / ".mcpspec-baseline.json").read_bytes()
    assert lint(".", "--select", "FS004", "--write-baseline", cwd=tmp_path).returncode == 1
    assert (tmp_path / ".mcpspec-baseline.json").read_bytes() == before


def test_updating_a_baseline_for_some_files_keeps_the_entries_of_the_others(tmp_path: Path) -> None:
    _write(tmp_path / "a.mcp-sandbox.yaml")
    _write(tmp_path / "b.mcp-sandbox.yaml")
    assert lint(".", "--select", "FS004", "--write-baseline", cwd=tmp_path).returncode == 0

    def entries() -> set[tuple[str, str]]:
        data = json.loads((tmp_path / ".mcpspec-baseline.json").read_text(encoding="utf-8"))
        return {(e["file"], e["path"]) for e in data["findings"]}

    assert entries() == {(f, f"servers.files.mounts[{i}].mode") for f in ("a.mcp-sandbox.yaml", "b.mcp-sandbox.yaml") for i in (0, 1)}
    # a.mcp-sandbox.yaml loses one finding; updating the baseline for it alone keeps b's entries.
    _write(tmp_path / "a.mcp-sandbox.yaml", SPEC.replace("to: /logs, mode: rw", "to: /logs, mode: ro"))
    update = lint("a.mcp-sandbox.yaml", "--select", "FS004", "--write-baseline", cwd=tmp_path)
    assert update.returncode == 0 and "kept 2 of files not checked now" in update.stderr
    assert entries() == {("a.mcp-sandbox.yaml", "servers.files.mounts[0].mode")} | {("b.mcp-sandbox.yaml", f"servers.files.mounts[{i}].mode") for i in (0, 1)}
    judged = lint(".", "--select", "FS004", "--baseline", ".mcpspec-baseline.json", cwd=tmp_path)
    assert judged.returncode == 0, judged.stdout
