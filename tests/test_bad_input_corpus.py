"""Every bad spec in tests/corpus/bad fails lint cleanly: exit 1, the expected first diagnostic, no traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "corpus" / "bad"
EXPECTED = CORPUS / "expected.txt"
MIN_CASES = 25
TIMEOUT_S = 20
MAX_FILE_BYTES = 16 * 1024 * 1024
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXPECTED_LINE = re.compile(r"(?P<name>\S+\.yaml) (?P<line>[1-9]\d*):(?P<col>[1-9]\d*) (?P<code>[A-Z]{2}\d{3})")
GOOD_SPEC = "version: 1\nproject: demo\nservers:\n  fetch:\n    command: [mcp-server-fetch]\n"

# Text the first diagnostic must also contain.
MESSAGES = {
    "16-python-object-apply-tag.yaml": "unsupported tag !!python/object/apply:os.system",
    "21-unknown-key-top-level.yaml": "unknown key 'descripton' in the top level; did you mean 'description'?",
    "22-unknown-key-server.yaml": "did you mean 'egress'?",
    "23-unknown-key-deep.yaml": "unknown key 'alow' in servers.fetch.egress; did you mean 'allow'?",
    "24-unknown-key-in-mount.yaml": "did you mean 'mode'?",
}


@dataclass(frozen=True)
class Run:
    status: int
    stdout: str
    stderr: str

    @property
    def first_line(self) -> str:
        return self.stdout.splitlines()[0] if self.stdout else ""


def run_cli(*args: str, marker: Path | None = None) -> Run:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    if marker is not None:
        env["MCPSPEC_MARKER"] = str(marker)
    proc = subprocess.run(
        [sys.executable, "-m", "mcpspec", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=TIMEOUT_S,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stdout, run.stdout
    assert "Traceback" not in run.stderr, run.stderr


def assert_first_diagnostic(run: Run, file: str, expected: str) -> None:
    line, col, code = expected.split()
    prefix = f"{file}:{line}:{col}: {code} "
    assert_no_traceback(run)
    assert run.status == EXIT_FINDINGS, f"exit status {run.status}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert run.first_line.startswith(prefix), f"expected {prefix!r}, got {run.first_line!r}"


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*.yaml"))


@cache
def expected_positions() -> dict[str, str]:
    """File name -> 'LINE COL CODE' from expected.txt."""
    positions: dict[str, str] = {}
    for number, text in enumerate(EXPECTED.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECTED_LINE.fullmatch(text)
        assert match, f"expected.txt:{number}: not 'FILENAME LINE:COL CODE': {text!r}"
        assert match["name"] not in positions, f"expected.txt:{number}: {match['name']} listed twice"
        positions[match["name"]] = f"{match['line']} {match['col']} {match['code']}"
    return positions


def test_corpus_and_expected_lines_match() -> None:
    names = {path.name for path in corpus_files()}
    expected = expected_positions()
    assert len(names) >= MIN_CASES, f"only {len(names)} files in {CORPUS}"
    assert sorted(names - expected.keys()) == [], "files without a line in expected.txt"
    assert sorted(expected.keys() - names) == [], "lines in expected.txt without a file"
    assert set(MESSAGES) <= names, "MESSAGES names a file that is not in the corpus"


@pytest.mark.parametrize("path", corpus_files(), ids=lambda path: path.name)
def test_bad_file_fails_with_first_diagnostic(path: Path, tmp_path: Path) -> None:
    expected = expected_positions().get(path.name)
    assert expected is not None, f"{path.name} has no line in expected.txt"
    file = path.relative_to(REPO).as_posix()
    marker = tmp_path / "tag-executed"
    run = run_cli("lint", file, marker=marker)
    assert not marker.exists(), "a YAML tag ran a shell command"
    assert_first_diagnostic(run, file, expected)
    if path.name in MESSAGES:
        assert MESSAGES[path.name] in run.first_line


def non_utf8() -> bytes:
    return GOOD_SPEC.replace("project: demo\n", "project: demo\ndescription: caf\xe9 servers\n").encode("latin-1")


def utf8_bom() -> bytes:
    return b"\xef\xbb\xbf" + GOOD_SPEC.encode()


def utf16_bom() -> bytes:
    return GOOD_SPEC.encode("utf-16")


def over_16_mib() -> bytes:
    line = b"# " + b"x" * 1021 + b"\n"
    return GOOD_SPEC.encode() + line * (MAX_FILE_BYTES // len(line) + 1)


GENERATED: dict[str, tuple[Callable[[], bytes], str]] = {
    "non-utf8.yaml": (non_utf8, "3 17 YM009"),
    "utf8-bom.yaml": (utf8_bom, "1 1 YM009"),
    "utf16-bom.yaml": (utf16_bom, "1 1 YM009"),
    "over-16-mib.yaml": (over_16_mib, "1 1 YM010"),
}


@pytest.mark.parametrize("name", GENERATED)
def test_generated_bad_file(name: str, tmp_path: Path) -> None:
    make, expected = GENERATED[name]
    path = tmp_path / name
    path.write_bytes(make())
    assert_first_diagnostic(run_cli("lint", str(path)), str(path), expected)


def test_good_spec_is_valid(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD_SPEC, encoding="utf-8")
    run = run_cli("lint", "--fail-on", "never", str(good))
    assert_no_traceback(run)
    assert run.status == 0, run.stdout + run.stderr


def _without_specs(tmp: Path) -> Path:
    """A directory of YAML that is no spec by name or by text (good.yaml beside it would count)."""
    (tmp / "other").mkdir()
    (tmp / "other" / "compose.yaml").write_text("services:\n  web: {image: nginx}\n", encoding="utf-8")
    return tmp / "other"


USAGE_CASES: dict[str, Callable[[Path], list[str]]] = {
    "missing-file": lambda tmp: ["lint", str(tmp / "missing.yaml")],
    "directory": lambda tmp: ["lint", str(_without_specs(tmp))],
    "unknown-flag": lambda tmp: ["lint", "--bogus", "x"],
    "no-arguments": lambda tmp: ["lint"],
    "missing-among-good": lambda tmp: ["lint", str(tmp / "good.yaml"), str(tmp / "missing.yaml"), str(tmp / "good.yaml")],
}


@pytest.mark.parametrize("case", USAGE_CASES)
def test_usage_error_exits_2(case: str, tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD_SPEC, encoding="utf-8")
    run = run_cli(*USAGE_CASES[case](tmp_path))
    assert_no_traceback(run)
    assert run.status == EXIT_USAGE, f"exit status {run.status}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    if "missing" in case:
        assert "missing.yaml" in run.stderr
