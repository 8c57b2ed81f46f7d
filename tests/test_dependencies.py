"""pyproject.toml's `dependencies` name exactly what the installed tool imports.

A third-party module that `src/` imports must come from a distribution in
`dependencies`, or (imported only inside a function or for type checking) from a
non-test extra; every distribution in `dependencies` or such an extra must be
imported somewhere under `src/`. The `run` extra (the MCP SDK) may also be imported when a
module of `src/mcpspec/run/` loads: only `mcpspec run` and `mcpspec lock` load those modules, after
checking that the extra is installed, and the last test runs every other command without it.
Distribution names are mapped to the import names the installed distributions provide
(PyYAML -> yaml), not to a hand-kept table.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from conftest import EXAMPLES, REPO

SRC = REPO / "src" / "mcpspec"
OWN = {"mcpspec", "__future__"}
RUN_EXTRA_HOME = "src/mcpspec/run/"  # modules only `run` and `lock` load


@dataclass(frozen=True)
class Import:
    module: str  # top-level name
    where: str  # file:line
    lazy: bool  # inside a function, or only for type checking


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distribution(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return _normalized(match.group(1))


def _project() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    assert isinstance(project, dict)
    return project


def declared() -> tuple[set[str], set[str]]:
    """(distributions in dependencies, distributions in the extras other than test)."""
    project = _project()
    required = {_distribution(r) for r in project["dependencies"]}  # type: ignore[attr-defined]
    extras = project.get("optional-dependencies", {})
    assert isinstance(extras, dict)
    optional = {_distribution(r) for name, items in extras.items() if name != "test" for r in items}
    return required, optional - required


def run_extra() -> set[str]:
    extras = _project().get("optional-dependencies", {})
    assert isinstance(extras, dict)
    return {_distribution(r) for r in extras["run"]}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_in(path: Path, root: Path = REPO) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit_statement(statement, True)
                for statement in child.orelse:
                    visit_statement(statement, lazy)
                continue
            visit_statement(child, inner)

    def visit_statement(node: ast.AST, lazy: bool) -> None:
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name.partition(".")[0], where, lazy) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(Import(node.module.partition(".")[0], where, lazy))
        visit(node, lazy)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def third_party_imports() -> list[Import]:
    every = [item for path in sorted(SRC.rglob("*.py")) for item in imports_in(path)]
    return [item for item in every if item.module not in OWN and item.module not in sys.stdlib_module_names]


def distributions_of(module: str) -> set[str]:
    return {_normalized(name) for name in importlib.metadata.packages_distributions().get(module, [])}


def test_the_import_scan_sees_eager_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import yaml.nodes\nfrom pydantic import BaseModel\nfrom . import sibling\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import networkx\n"
        "def f():\n    import jinja2\n    return jinja2\n"
        "class C:\n    def m(self):\n        from jsonschema import validate\n"
    )
    found = {(item.module, item.lazy) for item in imports_in(probe, tmp_path)}
    assert found == {("yaml", False), ("pydantic", False), ("typing", False), ("networkx", True), ("jinja2", True), ("jsonschema", True)}


def test_src_imports_only_declared_distributions() -> None:
    required, optional = declared()
    problems = []
    for item in third_party_imports():
        owners = distributions_of(item.module)
        if not owners:
            problems.append(f"{item.where}: imports {item.module}, which no installed distribution provides")
        elif owners & required:
            continue
        elif item.lazy and owners & optional:
            continue
        elif item.where.startswith(RUN_EXTRA_HOME) and owners & run_extra():
            continue
        elif owners & optional:
            problems.append(f"{item.where}: imports {item.module} (an optional extra) when the module loads; import it where it is used")
        else:
            problems.append(f"{item.where}: imports {item.module} from {', '.join(sorted(owners))}, which pyproject.toml's dependencies do not list")
    assert not problems, "\n".join(problems)


def test_every_declared_distribution_is_imported_by_src() -> None:
    required, optional = declared()
    used = {dist for item in third_party_imports() for dist in distributions_of(item.module)}
    unused = sorted((required | optional) - used)
    assert not unused, f"pyproject.toml declares {unused} for the tool, but nothing under src/ imports them; move them to the test extra"


def _closure(names: set[str]) -> set[str]:
    """The distributions ``names`` need, theirs included (requirements of an extra left out)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo.extend(_distribution(r) for r in requires if "extra" not in r.partition(";")[2])
    return seen


def test_the_tool_runs_with_only_its_dependencies_importable(tmp_path: Path) -> None:
    """lint, graph and build of every example (report, plan, diff and import too), with every installed
    module that neither mcpspec's dependencies nor what they need provide made unimportable (the test
    extra, networkx, the `run` extra's MCP SDK...); `run` and `lock` then stop with one line naming the extra."""
    required, _ = declared()
    needed = _closure(required) | {"mcpspec"}
    blocked = sorted(
        module
        for module, owners in importlib.metadata.packages_distributions().items()
        if module.isidentifier() and not {_normalized(o) for o in owners} & needed and module not in sys.stdlib_module_names
    )
    assert {"networkx", "hypothesis", "pytest", "mcp"} <= set(blocked)  # what the test and run extras install
    examples = [str(p) for p in EXAMPLES]
    script = f"""
import sys
BLOCKED = set({blocked!r})
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not a dependency of mcpspec")
        return None
sys.meta_path.insert(0, Refuse())
import json
from mcpspec.cli import app
for args in json.load(sys.stdin):
    code = app(args=args, prog_name="mcpspec", standalone_mode=False)
    if code not in ((2,) if args[0] in ("run", "lock") else (0, 1, None)):
        sys.exit(f"exit {{code}}: mcpspec {{' '.join(args)}}")
"""
    runs = [["lint", *examples, "--format", fmt, "--output", str(tmp_path / f"lint.{fmt}")] for fmt in ("text", "json", "sarif", "github", "junit")]
    for example in examples:
        for fmt in ("dot", "mermaid", "json"):
            runs.append(["graph", example, "--format", fmt, "--output", str(tmp_path / f"graph.{fmt}")])
        for target in ("bwrap", "systemd"):
            runs.append(["build", example, "--target", target, "--out", str(tmp_path / target / Path(example).stem)])
    example = examples[0]
    runs += [
        ["report", example, "-o", str(tmp_path / "report.html")], ["report", example, "-o", str(tmp_path / "report.md")],
        ["plan", example, "-o", str(tmp_path / "plan.json")], ["diff", example, examples[1], "-o", str(tmp_path / "diff.md"), "-f", "markdown"],
        ["import", "--from", "auto", str(REPO / "tests" / "clients" / "claude_desktop_config.json"), "-o", str(tmp_path / "imported.yaml")],
        ["run", example, "repo"], ["lock", example],
    ]
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(runs), capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not a dependency" not in done.stderr
    assert (tmp_path / "graph.json").stat().st_size > 0 and (tmp_path / "bwrap" / "coding-agent" / "repo.py").is_file()
    assert all((tmp_path / name).stat().st_size > 0 for name in ("report.html", "report.md", "plan.json", "diff.md", "imported.yaml"))
    extra = "needs the MCP SDK, which a lint-only install leaves out: pip install 'mcpspec[run]'"
    assert [line for line in done.stderr.splitlines() if extra in line] == [f"mcpspec: error: `mcpspec {name}` {extra}" for name in ("run", "lock")]
