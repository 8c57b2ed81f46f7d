"""`mcpspec init`: a commented starter that lints without spec errors and with nothing above medium."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

from conftest import REPO, run_cli
from mcpspec import catalog
from mcpspec.init import InitError, render_starter, write_starter
from mcpspec.init.starter import project_name

ALL = [entry.name for entry in catalog.entries()]
SEVERE = {"error", "high", "critical"}
SCHEMA = json.loads((REPO / "schemas" / "mcp-sandbox.schema.json").read_text(encoding="utf-8"))


def _lint(path: Path) -> list[dict[str, object]]:
    result = run_cli("lint", "--format", "json", str(path), cwd=path.parent)
    assert "Traceback" not in result.stderr
    results: list[dict[str, object]] = json.loads(result.stdout)["results"]
    return results


def _init(directory: Path, *servers: str) -> Path:
    args = ["init", "-o", str(directory / "mcp-sandbox.yaml")]
    for server in servers:
        args += ["--server", server]
    result = run_cli(*args, cwd=directory)
    assert result.returncode == 0, result.stderr
    return directory / "mcp-sandbox.yaml"


@pytest.mark.parametrize("servers", [[name] for name in ALL] + [ALL], ids=[*ALL, "all"])
def test_starter_lints_with_nothing_above_medium(tmp_path: Path, servers: list[str]) -> None:
    spec = _init(tmp_path, *servers)
    severe = [f"{r['code']} {r['severity']} {r['path']}: {r['message']}" for r in _lint(spec) if r["severity"] in SEVERE]
    assert severe == []


def test_default_starter_is_for_this_project(tmp_path: Path) -> None:
    project = tmp_path / "Acme_Web.Backend"
    project.mkdir()
    result = run_cli("init", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "REVIEW" in result.stdout
    text = (project / "mcp-sandbox.yaml").read_text(encoding="utf-8")
    data = YAML(typ="safe").load(text)
    assert data["project"] == "acme-web-backend"
    assert list(data["servers"]) == ["filesystem"]
    assert data["agents"]["assistant"]["servers"] == ["filesystem"]
    assert str(tmp_path) not in text, "no path of this machine in the starter"


def test_starter_is_valid_for_the_schema_editors_use(tmp_path: Path) -> None:
    data = YAML(typ="safe").load(_init(tmp_path, *ALL).read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)


def test_every_choice_to_review_is_marked(tmp_path: Path) -> None:
    text = _init(tmp_path, *ALL).read_text(encoding="utf-8")
    lines = text.splitlines()
    for key in ("trust:", "package:", "project:", "sink:", "root:", "scopes:", "ref:"):
        marked = [line for line in lines if line.strip().startswith(key)]
        assert marked, key
        assert all("# REVIEW:" in line for line in marked), key
    trailing = [line for line in lines if "# " in line and not line.lstrip().startswith("#")]
    assert trailing and all(re.search(r"\S  # ", line) for line in trailing), "two spaces before a comment, as yamllint wants"
    for entry in catalog.entries():
        for note in entry.review:
            assert f"# REVIEW: {note}" in text
        for tool in entry.tools:
            assert f"      {tool.name}:\n" in text
    data = YAML(typ="safe").load(text)
    for entry in catalog.entries():
        server = data["servers"][entry.name]
        assert server["package"]["version"] == entry.version
        assert server["egress"]["default"] == "deny"
        assert all(mount["from"].startswith("workspace.") for mount in server.get("mounts", []))
        if entry.credential is not None:
            assert data["secrets"][entry.credential.secret]["provider"] == "env"
            assert server["secrets"] == [{"use": entry.credential.secret, "as": {"env": entry.credential.env}}]


def test_existing_file_is_kept_without_force(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text("# mine\n", encoding="utf-8")
    result = run_cli("init", "-o", str(spec), cwd=tmp_path)
    assert result.returncode == 2
    assert "--force" in result.stderr
    assert spec.read_text(encoding="utf-8") == "# mine\n"
    result = run_cli("init", "-o", str(spec), "--force", "--server", "fetch", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "mcp-server-fetch" in spec.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp-sandbox.schema.json", "mcp-sandbox.yaml"], "no temporary file left"


def test_the_modeline_names_the_schema_copy_written_beside_the_spec(tmp_path: Path) -> None:
    """docs/schema.md: the $id is not served, so editors point at a copy; init writes both."""
    (tmp_path / "ops").mkdir()
    result = run_cli("init", "-o", "ops/mcp-sandbox.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    first = (tmp_path / "ops" / "mcp-sandbox.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=mcp-sandbox.schema.json"
    assert "$schema=mcp-sandbox.schema.json" in (REPO / "docs" / "schema.md").read_text(encoding="utf-8")
    committed = (REPO / "schemas" / "mcp-sandbox.schema.json").read_text(encoding="utf-8")
    schema = tmp_path / "ops" / "mcp-sandbox.schema.json"
    assert schema.read_text(encoding="utf-8") == committed
    assert f"wrote {Path('ops') / 'mcp-sandbox.schema.json'}" in result.stdout
    schema.write_text("{}\n", encoding="utf-8")
    kept = run_cli("init", "-o", "ops/mcp-sandbox.yaml", "--force", "-s", "fetch", cwd=tmp_path)
    assert kept.returncode == 0 and schema.read_text(encoding="utf-8") == committed, "--force refreshes the copy"
    schema.write_text("{}\n", encoding="utf-8")
    (tmp_path / "ops" / "mcp-sandbox.yaml").unlink()
    kept = run_cli("init", "-o", "ops/mcp-sandbox.yaml", cwd=tmp_path)
    assert kept.returncode == 0 and schema.read_text(encoding="utf-8") == "{}\n" and "kept" in kept.stdout, "a user's copy is kept"


def test_unknown_server_is_a_usage_error_naming_the_catalog(tmp_path: Path) -> None:
    result = run_cli("init", "--server", "githb", cwd=tmp_path)
    assert result.returncode == 2
    assert "'githb'" in result.stderr and "github" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "mcp-sandbox.yaml").exists()


def test_missing_output_directory_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("init", "-o", str(tmp_path / "nope" / "mcp-sandbox.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_directory_as_output_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("init", "-o", str(tmp_path), "--force", cwd=tmp_path)
    assert result.returncode == 2
    assert "is a directory" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_list_names_every_entry_with_its_pin() -> None:
    result = run_cli("init", "--list")
    assert result.returncode == 0
    for entry in catalog.entries():
        assert f"{entry.package.name}@{entry.version}" in result.stdout


def test_api_refuses_overwrite_and_unknown_names(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    write_starter(spec, ["git"])
    with pytest.raises(InitError):
        write_starter(spec, ["git"])
    with pytest.raises(InitError):
        render_starter("x", ["nope"])
    assert render_starter("demo", ["git", "git"]).count("\n  git:\n") == 1


@pytest.mark.parametrize(
    ("directory", "name"),
    [("acme", "acme"), ("Acme Web", "acme-web"), ("2024_project", "project"), ("___", "my-project"), ("é", "my-project"), ("a" * 60, "a" * 40)],
)
def test_project_name_is_a_valid_spec_name(directory: str, name: str) -> None:
    assert project_name(directory) == name


def test_lint_never_imports_ruamel(tmp_path: Path) -> None:
    spec = _init(tmp_path, "git")
    code = (
        "import sys\nfrom mcpspec import api\nfrom mcpspec.cli import app\n"
        f"api.lint_files([{str(spec)!r}])\n"
        "assert not any(name.startswith('ruamel') for name in sys.modules), 'ruamel imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
