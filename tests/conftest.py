from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def require_tool(name: str) -> str:
    """Path of a real tool; skip without it, unless MCPSPEC_REQUIRE_REAL_TOOLS=1 makes that a failure."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found:
        return found
    if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
        pytest.fail(f"{name} is required (MCPSPEC_REQUIRE_REAL_TOOLS=1) but not installed")
    pytest.skip(f"{name} is not installed")


def run_cli(*args: str, cwd: Path = REPO, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpspec", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", help="rewrite golden files from the current output")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))
