"""Red-team attacks on `--target srt` and VS Code's srt with the real sandbox-runtime: each test runs an attack from inside
the sandboxed server through the sessions of test_target_srt_real.py and fails if it gets through."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import test_target_srt_real as real
from mcpspec.api import load
from mcpspec.targets.build import build_plan
from mcpspec.targets.writer import write_build
from test_target_srt_real import Box, _as_vscode_runs_it

box = real.box  # the session's fixture, shared with that module

# The directories under the home that srt makes writable unless its read rules hide them (sandbox-utils.js, 0.0.83).
CONVENIENCE = (".npm/_logs", ".claude/debug")


def _home_with_convenience_dirs(box: Box, name: str) -> Path:
    home = box.sandbox.base / name
    for relative in CONVENIENCE:
        (home / relative).mkdir(parents=True, exist_ok=True)
    for path in (home, *home.rglob("*")):
        path.chmod(0o777)
    return home


def _mounts(box: Box, *extra: str) -> str:
    lines = [f"      - {{from: {box.sandbox.site}, to: {box.sandbox.site}}}",
             f"      - {{from: {box.sandbox.probe_dir}, to: {box.sandbox.probe_dir}}}", *(f"      - {line}" for line in extra)]
    return "\n    mounts:\n" + "\n".join(lines) + "\n"


def _build(box: Box, name: str, server_yaml: str, home: Path) -> Path:
    """An srt build of the probe whose environment names HOME (as `inherit: minimal` does), where srt finds the home."""
    spec = box.spec(name, server_yaml)
    text = spec.read_text(encoding="utf-8").replace("set: {PYTHONPATH:", f"set: {{HOME: {home}, PYTHONPATH:", 1)
    spec.write_text(text, encoding="utf-8")
    build = build_plan(load(spec), "srt")
    out = box.sandbox.base / f"out-{name}"
    write_build(out, build)
    return out / "probe.sh"


def test_a_read_only_home_gets_no_write_srt_adds(box: Box) -> None:
    home = _home_with_convenience_dirs(box, "home-ro")
    spec = _mounts(box, f"{{from: {home}, to: {home}}}")
    launcher = _build(box, "home-ro", spec, home)
    got = box.session([("write_path", {"path": str(home / relative / "planted.txt"), "data": "escaped"}) for relative in CONVENIENCE],
                      launcher=launcher)
    assert not [relative for relative in CONVENIENCE if (home / relative / "planted.txt").exists()], got


def test_vscode_a_project_in_the_home_gets_no_write_srt_adds(box: Box) -> None:
    """VS Code leaves ~ readable when a mount lies in a home, and srt then makes its convenience dirs of ~ writable."""
    home = Path(tempfile.mkdtemp(prefix="mcpspec-redteam-", dir="/home"))
    try:
        home.chmod(0o777)
        for relative in CONVENIENCE:
            (home / relative).mkdir(parents=True)
        project = home / "project"
        project.mkdir()
        for path in (home, *home.rglob("*")):
            path.chmod(0o777)
        saved = box.server_yaml, box.home
        box.server_yaml, box.home = _mounts(box, f"{{from: {project}, to: {project}, mode: rw}}"), home
        try:
            launcher = _as_vscode_runs_it(box)
        finally:
            box.server_yaml, box.home = saved
        got = box.session([("write_path", {"path": str(home / relative / "planted.txt"), "data": "escaped"}) for relative in CONVENIENCE]
                          + [("write_path", {"path": str(project / "made.txt"), "data": "rw"})], launcher=launcher)
        assert got[-1] == {"ok": True}, got  # the spec's rw mount is writable: the session ran
        assert not [relative for relative in CONVENIENCE if (home / relative / "planted.txt").exists()], got
    finally:
        shutil.rmtree(home)
