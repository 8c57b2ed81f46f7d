"""The install path the README gives: `python -m build` makes an sdist and a wheel that pass
`twine check`, the wheel declares exactly the runtime dependencies (the MCP SDK only under the
`run` extra), and, installed into a fresh venv beside only those dependencies, it lints, builds
and reports, while `run` says in one line which extra it needs.

Everything runs offline: the build uses the current venv's setuptools (--no-isolation), the wheel
is installed with --no-deps, and the runtime dependencies are linked in from this venv one
distribution at a time, so nothing else (the MCP SDK, the test extra) is importable.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO
from test_dependencies import _closure, _distribution

RUN_EXTRA_LINE = "mcpspec: error: `mcpspec run` needs the MCP SDK, which a lint-only install leaves out: pip install 'mcpspec[run]'"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdist and wheel built from a copy of what the sdist is made of (the checkout stays clean)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("mcpspec-*-py3-none-any.whl")
    return wheel


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))


def test_build_makes_an_sdist_and_a_wheel_that_pass_twine_check(dist: Path) -> None:
    assert len(list(dist.glob("mcpspec-*.tar.gz"))) == 1
    wheel = _wheel(dist)
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(wheel) as archive:
        packed = set(archive.namelist())
    data = sorted(p.relative_to(REPO / "src").as_posix() for p in (REPO / "src" / "mcpspec").rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc"))
    assert data and not [name for name in data if name not in packed], "package data missing from the wheel"


def test_the_wheel_requires_the_runtime_dependencies_and_mcp_only_in_the_run_extra(dist: Path) -> None:
    with (REPO / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    requires = _metadata(_wheel(dist)).get_all("Requires-Dist") or []
    always = sorted(r for r in requires if "extra ==" not in r)
    assert sorted(_distribution(r) for r in always) == sorted(_distribution(r) for r in project["dependencies"])
    assert "mcp" not in {_distribution(r) for r in always}
    mcp = [r for r in requires if _distribution(r) == "mcp"]
    assert mcp == [r for r in mcp if r.endswith('extra == "run"')] and mcp


def _runtime_only(requires: list[str], into: Path) -> None:
    """Link into ``into`` the modules and metadata of exactly the distributions ``requires`` need."""
    into.mkdir()
    for name in sorted(_closure({_distribution(r) for r in requires})):
        try:
            found = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:  # required on another platform only (colorama)
            continue
        base = Path(str(found.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in found.files or () if not str(f).startswith("..")}
        for top in tops:
            if (base / top).exists() and not (into / top).exists():
                (into / top).symlink_to(base / top)


def _tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_the_wheel_in_a_fresh_venv_with_only_runtime_dependencies_lints_builds_and_reports(dist: Path, tmp_path: Path) -> None:
    wheel = _wheel(dist)
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True, timeout=120)
    python = fresh / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    requires = [r for r in _metadata(wheel).get_all("Requires-Dist") or [] if "extra ==" not in r]
    deps = tmp_path / "deps"
    _runtime_only(requires, deps)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GITHUB_ACTIONS")} | {"PYTHONPATH": str(deps), "PYTHONNOUSERSITE": "1"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)

    where = run(str(python), "-c", "import mcpspec.cli, mcpspec; print(mcpspec.__file__)")
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(fresh), "the checkout's mcpspec ran, not the wheel's"
    absent = run(str(python), "-c", "import mcp")
    assert absent.returncode == 1 and "ModuleNotFoundError" in absent.stderr
    command = str(fresh / "bin" / "mcpspec")
    lint = run(command, "lint", "--ignore", "TS008,TS009", *[str(p) for p in EXAMPLES if p.name != "risky.yaml"])
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert re.fullmatch(r"\d+ files checked: no problems\.\n", lint.stdout)
    example = str(REPO / "examples" / "coding-agent.yaml")
    for target in ("bwrap", "systemd"):
        built = run(command, "build", example, "--target", target, "--out", str(tmp_path / target))
        assert built.returncode == 0, built.stderr
    checkout = subprocess.run([sys.executable, "-m", "mcpspec", "build", example, "--target", "systemd", "--out", str(tmp_path / "checkout")], capture_output=True, text=True, timeout=120, check=False)
    assert checkout.returncode == 0, checkout.stderr
    assert _tree(tmp_path / "systemd") == _tree(tmp_path / "checkout")  # the shell helpers (package data) inlined alike
    report = run(command, "report", example, "--exit-zero", "-o", "report.html")
    assert report.returncode == 0 and (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>"), report.stderr
    started = run(command, "run", example, "repo")
    assert (started.returncode, started.stdout, started.stderr) == (2, "", RUN_EXTRA_LINE + "\n")
