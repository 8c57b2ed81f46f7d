"""The batch commands start without scanning for pydantic plugins: no plugin may watch a spec being read,
and the scan of every installed distribution's entry points costs a tenth of a small lint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

PLUGIN = """import os, pathlib
pathlib.Path(os.environ["PLUGIN_MARK"]).write_text("loaded")


class Spy:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = Spy()
"""


def _with_plugin(tmp_path: Path) -> dict[str, str]:
    """A pydantic plugin, installed as a distribution on PYTHONPATH, that leaves a mark when loaded."""
    (tmp_path / "spy_plugin.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "spy_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[pydantic]\nspy = spy_plugin:plugin\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = str(tmp_path)
    env["PLUGIN_MARK"] = str(tmp_path / "mark")
    return env


def test_lint_loads_no_pydantic_plugin(tmp_path: Path) -> None:
    env = _with_plugin(tmp_path)
    done = subprocess.run([sys.executable, "-m", "mcpspec", "lint", str(REPO / "examples" / "coding-agent.yaml")],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stderr
    assert not (tmp_path / "mark").exists()


def test_the_plugin_is_found_otherwise(tmp_path: Path) -> None:
    """The spy is a real plugin: reading the models outside the CLI loads it."""
    env = _with_plugin(tmp_path)
    subprocess.run([sys.executable, "-c", "import mcpspec.spec.models"], env=env, capture_output=True, timeout=120, check=True)
    assert (tmp_path / "mark").read_text(encoding="utf-8") == "loaded"
