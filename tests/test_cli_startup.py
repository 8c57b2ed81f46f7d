"""The batch commands start without scanning for pydantic plugins: no plugin may watch a spec being read,
and the scan of every installed distribution's entry points costs a tenth of a small lint."""

from __future__ import annotations

import json
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


# Modules a small lint must not import: the targets, the other commands' machinery and the
# libraries only they use. A new top-level import that pulls one in slows every lint.
NOT_FOR_LINT = (
    "jinja2", "ruamel", "rich", "tomllib", "json5", "mcp",
    "mcpspec.targets.base", "mcpspec.targets.build", "mcpspec.report.review", "mcpspec.report.graph",
    "mcpspec.importer", "mcpspec.diff", "mcpspec.run.session", "mcpspec.verify", "mcpspec.catalog", "mcpspec.init",
)

LINT_AND_LIST_MODULES = """import json, os, sys
real_exit = os._exit


def report(code):
    sys.stdout.write("\\n" + json.dumps(sorted(sys.modules)) + "\\n")
    sys.stdout.flush()
    real_exit(code)


os._exit = report
sys.argv = ["mcpspec", "lint", sys.argv[1]]
from mcpspec.__main__ import main
main()
"""


def test_lint_imports_only_what_it_needs() -> None:
    done = subprocess.run([sys.executable, "-c", LINT_AND_LIST_MODULES, str(REPO / "examples" / "coding-agent.yaml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stderr
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "mcpspec.rules.registry" in loaded  # the lint did run
    heavy = sorted(name for name in loaded if any(name == banned or name.startswith(banned + ".") for banned in NOT_FOR_LINT))
    assert not heavy, f"a small lint imports {heavy}"


def test_typer_builds_only_the_command_that_runs() -> None:
    from typer.main import get_command

    from mcpspec.cli import app
    from mcpspec.lazycommands import LazyCommands

    group = get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    assert isinstance(commands, LazyCommands)
    assert list(commands)[:3] == ["lint", "rules", "explain"] and "import" in commands and len(commands) == 16
    assert not commands._built  # listing the names builds nothing
    assert commands["lint"].name == "lint" and list(commands._built) == ["lint"]
