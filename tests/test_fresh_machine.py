"""A clone anywhere runs the suite: no test or source reads outside the repository, and
a missing system tool is one line that names the Debian package to install."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from conftest import REPO, require_python_venv, require_tool

# Ways to name the directory beside the repository that holds the design docs and vendored
# data (it is not there in a clone elsewhere). Spelt in pieces so this file does not match.
_SIBLING = "sha" + "red"
OUTSIDE = re.compile(
    "|".join(
        (
            rf"\.\./{_SIBLING}\b",  # a relative path up and across
            rf"/work/{_SIBLING}\b",  # the absolute path on the development machine
            rf"""["']{_SIBLING}["']\s*[/,)]""",  # a path part, joined with / or os.path.join
            r"\bREPO\.parent\b",  # anything beside the repository
        )
    )
)


_ABOVE = "REPO" + ".parent"


def _source_files() -> list[Path]:
    # Golden outputs are data a test compares, not code that opens a path: a workspace dir
    # named like the sibling directory is printed as a quoted word in a golden plan.
    # Vendored schemas (tests/data/*.json, unmodified third-party files) are data too: compose-spec's
    # text lists the bind propagation modes, 'shared' among them.
    golden = REPO / "tests" / "golden"
    vendored = REPO / "tests" / "data"
    return sorted(
        p for top in ("src", "tests") for p in (REPO / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and not p.is_relative_to(golden)
        and not (p.is_relative_to(vendored) and p.suffix == ".json")
    )


def test_the_outside_pattern_catches_each_way_of_naming_the_sibling_directory() -> None:
    caught = [
        f'SCHEMA = {_ABOVE} / "{_SIBLING}" / "vendor" / "x.json"',
        f"open('../{_SIBLING}/vendor/x.json')",
        f"/work/{_SIBLING}/knowledge/facts.md",
        f"os.path.join(root, '..', '{_SIBLING}')",
        f"data = {_ABOVE} / 'other'",
    ]
    for line in caught:
        assert OUTSIDE.search(line), line
    for line in ("- {from: /srv/shared/notes, to: /notes}", "from: workspace.shared", "slug='shared-secret'", "shared paths or sandboxes"):
        assert not OUTSIDE.search(line), line


def test_no_file_under_src_or_tests_reads_outside_the_repository() -> None:
    files = _source_files()
    assert len(files) > 100
    found = []
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_vendored_sarif_schema_is_inside_the_repository() -> None:
    assert conftest.SARIF_SCHEMA.is_relative_to(REPO) and conftest.SARIF_SCHEMA.is_file()
    assert conftest.SARIF_SCHEMA.name in (REPO / "tests" / "data" / "README.md").read_text(encoding="utf-8")


# --- require_tool: a missing tool is one line naming its package ---

MISSING = "mcpspec-no-such-tool"


@pytest.fixture
def missing_tool(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(conftest.DEBIAN_PACKAGES, MISSING, "mcpspec-no-such-package")
    return MISSING


def test_require_tool_skips_with_one_line_naming_the_package(missing_tool: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSPEC_REQUIRE_REAL_TOOLS", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_tool(missing_tool)
    assert str(skipped.value) == f"{MISSING} is not installed: apt-get install mcpspec-no-such-package"


def test_require_tool_fails_with_that_line_when_real_tools_are_required(missing_tool: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPSPEC_REQUIRE_REAL_TOOLS", "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_tool(missing_tool)
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"{MISSING} is not installed: apt-get install mcpspec-no-such-package")
    assert "MCPSPEC_REQUIRE_REAL_TOOLS=1" in message


def test_require_tool_names_what_it_cannot_place_and_tools_from_pypi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSPEC_REQUIRE_REAL_TOOLS", raising=False)
    with pytest.raises(pytest.skip.Exception) as unknown:
        require_tool("mcpspec-unlisted-tool")
    assert "mcpspec-unlisted-tool is not installed" in str(unknown.value) and "DEBIAN_PACKAGES" in str(unknown.value)
    assert conftest.missing_tool_message("check-jsonschema").startswith("check-jsonschema is not installed: pip install check-jsonschema")
    with pytest.raises(pytest.skip.Exception) as absolute:
        require_tool("/usr/lib/mcpspec-no-such-dir/tool")
    assert str(absolute.value).startswith("/usr/lib/mcpspec-no-such-dir/tool is not installed")


def test_require_tool_returns_a_tool_that_is_there() -> None:
    assert require_tool(Path(sys.executable).name) and require_tool(sys.executable) == sys.executable


def test_require_python_venv_checks_the_module_as_well_as_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSPEC_REQUIRE_REAL_TOOLS", raising=False)
    assert require_python_venv(sys.executable) == sys.executable
    without = tmp_path / "python-without-venv"
    without.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    without.chmod(0o755)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_python_venv(str(without))
    assert str(skipped.value) == f"{without} has no venv module: apt-get install python3-venv"
    monkeypatch.setenv("MCPSPEC_REQUIRE_REAL_TOOLS", "1")
    with pytest.raises(pytest.fail.Exception):
        require_python_venv(str(without))


def _run_pytest_on(tmp_path: Path, require: bool) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_needs_tool.py"
    test.write_text(
        f"import sys\nsys.path.insert(0, {str(REPO / 'tests')!r})\nimport conftest\n"
        f"conftest.DEBIAN_PACKAGES[{MISSING!r}] = 'mcpspec-no-such-package'\n\n"
        f"def test_needs_it():\n    conftest.require_tool({MISSING!r})\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "MCPSPEC_REQUIRE_REAL_TOOLS"} | {"COLUMNS": "300"} | ({"MCPSPEC_REQUIRE_REAL_TOOLS": "1"} if require else {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(test)],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60, check=False,
    )


def test_a_person_sees_one_line_per_missing_tool_skipped_or_failed(tmp_path: Path) -> None:
    line = f"{MISSING} is not installed: apt-get install mcpspec-no-such-package"
    skipped = _run_pytest_on(tmp_path, require=False)
    assert skipped.returncode == 0, skipped.stdout
    assert [entry for entry in skipped.stdout.splitlines() if line in entry and entry.startswith("SKIPPED")], skipped.stdout
    failed = _run_pytest_on(tmp_path, require=True)
    assert failed.returncode == 1, failed.stdout
    assert [entry for entry in failed.stdout.splitlines() if line in entry and entry.startswith("FAILED")], failed.stdout
    assert "Traceback" not in failed.stdout
