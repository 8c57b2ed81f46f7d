from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
# Vendored data lives in tests/data (see its README): no test reads outside the repository.
SARIF_SCHEMA = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"


# Tool -> the Debian package that provides it (the same packages as .ci/run and the
# README's "System packages"); tools from PyPI come with `pip install -e '.[test]'`.
DEBIAN_PACKAGES = {
    "bwrap": "bubblewrap",
    "catatonit": "catatonit",
    "chromium": "chromium",
    "dot": "graphviz",
    "fuse-overlayfs": "fuse-overlayfs",
    "git": "git",
    "ip": "iproute2",
    "make": "make",
    "mmdebstrap": "mmdebstrap",
    "newuidmap": "uidmap",
    "node": "npm",  # Debian's npm brings nodejs, which srt runs on
    "nsenter": "util-linux",
    "podman": "podman",
    "runc": "runc",
    "setpriv": "util-linux",
    "slirp4netns": "slirp4netns",
    "socat": "socat",
    "unshare": "util-linux",
    "squid": "squid",
    "systemd-analyze": "systemd",
    "systemd-tmpfiles": "systemd",
    "rg": "ripgrep",
    "/usr/bin/python3": "python3",
    "/usr/lib/systemd/systemd": "systemd",
}
PYPI_TOOLS = {"check-jsonschema": "check-jsonschema"}


# Scanners with dependency trees that clash with ours: each in a venv of its own (.ci/run makes them).
OWN_VENV_TOOLS = {"checkov": "checkov==3.3.30"}
# Sandboxes from the npm registry, pinned by tests/tools/package-lock.json (.ci/run installs them).
NPM_TOOLS = {"srt": "@anthropic-ai/sandbox-runtime", "codex": "@openai/codex"}
NPM_BIN = REPO / ".tools" / "npm" / "node_modules" / ".bin"


def missing_tool_message(name: str) -> str:
    """One line: which tool is missing and what installs it."""
    if name in NPM_TOOLS:
        return f"{name} is not installed: mkdir -p .tools/npm && cp tests/tools/package*.json .tools/npm/ && npm ci --prefix .tools/npm (.ci/run does; {NPM_TOOLS[name]} at the version the lock pins)"
    if name in OWN_VENV_TOOLS:
        return f"{name} is not installed: python3 -m venv .tools/{name} && .tools/{name}/bin/pip install {OWN_VENV_TOOLS[name]}, then put .tools/{name}/bin on PATH (.ci/run does)"
    if name in PYPI_TOOLS:
        return f"{name} is not installed: pip install {PYPI_TOOLS[name]} (it comes with pip install -e '.[test]')"
    package = DEBIAN_PACKAGES.get(name)
    if package is None:
        return f"{name} is not installed (no Debian package is known for it; add it to DEBIAN_PACKAGES in tests/conftest.py)"
    return f"{name} is not installed: apt-get install {package}"


def find_tool(name: str) -> str | None:
    """An absolute name must be executable itself; a bare one is looked up on PATH, then beside the interpreter."""
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) and os.path.isfile(name) else None
    own_venv = REPO / ".tools" / name / "bin"
    if name in NPM_TOOLS:
        return shutil.which(name, path=str(NPM_BIN))
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name, path=str(own_venv))


def require_tool(name: str) -> str:
    """Path of a real tool. Without it the test skips with one line naming the tool and its
    package, or fails with that line under MCPSPEC_REQUIRE_REAL_TOOLS=1 (as .ci/run sets)."""
    found = find_tool(name)
    if found:
        return found
    _missing(missing_tool_message(name))


def require_python_venv(python: str = "/usr/bin/python3") -> str:
    """``python``, once it is there with its venv module (Debian ships that apart, as python3-venv)."""
    found = require_tool(python)
    probe = subprocess.run([found, "-c", "import ensurepip, venv"], capture_output=True, timeout=60, check=False)
    if probe.returncode != 0:
        _missing(f"{python} has no venv module: apt-get install python3-venv")
    return found


def _missing(message: str) -> NoReturn:
    """One line: skip, or fail under MCPSPEC_REQUIRE_REAL_TOOLS=1 (as .ci/run sets)."""
    if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
        pytest.fail(f"{message} (required: MCPSPEC_REQUIRE_REAL_TOOLS=1)", pytrace=False)
    pytest.skip(message)


def run_cli(*args: str, cwd: Path = REPO, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpspec", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", help="rewrite golden files from the current output")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


# Examples the build property ran per target (tests/test_build_property.py), shown at the end of the run.
PROPERTY_EXAMPLES: Counter[str] = Counter()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if PROPERTY_EXAMPLES:
        counts = ", ".join(f"{target} {count}" for target, count in sorted(PROPERTY_EXAMPLES.items()))
        terminalreporter.write_line(f"build property examples per target: {counts}")
