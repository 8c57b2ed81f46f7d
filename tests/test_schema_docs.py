"""docs/schema.md says what the generated schema does: its $id, the editor settings, the catalog entry."""

from __future__ import annotations

import json
import re

from conftest import EXAMPLES, REPO
from mcpspec.spec.models import NULL_LIFTS
from mcpspec.spec.schema import SCHEMA_ID, build_schema

DOC = REPO / "docs" / "schema.md"
ID_PATTERN = re.compile(r"^https://mcpspec\.dev/schema/(?P<major>[1-9][0-9]*)/mcp-sandbox\.schema\.json$")


def json_blocks() -> list[object]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)]


def test_the_id_follows_the_documented_pattern_with_the_format_version_as_major() -> None:
    match = ID_PATTERN.match(SCHEMA_ID)
    assert match, SCHEMA_ID
    assert build_schema()["$id"] == SCHEMA_ID
    assert build_schema()["properties"]["version"]["const"] == int(match["major"])
    assert f"`{SCHEMA_ID}`" in DOC.read_text(encoding="utf-8")


def test_the_vscode_setting_and_the_schemastore_entry_are_valid_json_naming_the_schema() -> None:
    settings, entry = json_blocks()
    assert isinstance(settings, dict) and isinstance(entry, dict)
    ((path, globs),) = settings["yaml.schemas"].items()
    assert (REPO / path).is_file()
    assert globs == ["mcp-sandbox.yaml", "*.mcp-sandbox.yaml"]
    assert entry["url"] == SCHEMA_ID
    assert entry["fileMatch"] == globs
    assert set(entry) == {"name", "description", "fileMatch", "url"}


def test_the_modeline_shown_is_the_one_the_examples_use() -> None:
    line = EXAMPLES[0].read_text(encoding="utf-8").splitlines()[0]
    assert f"```yaml\n{line}\n" in DOC.read_text(encoding="utf-8")


def test_every_field_where_null_lifts_a_limit_is_named() -> None:
    text = DOC.read_text(encoding="utf-8")
    for _, field in NULL_LIFTS:
        assert f"{field}`" in text, field


def test_the_readme_links_the_schema_docs() -> None:
    assert "(docs/schema.md)" in (REPO / "README.md").read_text(encoding="utf-8")


def test_null_is_offered_only_where_it_lifts_a_limit() -> None:
    schema = build_schema()
    nullable: set[tuple[str, str]] = set()
    for name, node in [("Spec", schema), *schema["$defs"].items()]:
        for key, prop in node.get("properties", {}).items():
            text = json.dumps({k: v for k, v in prop.items() if k != "examples"})
            if '"null"' in text:
                nullable.add((name, key))
            assert '"default": null' not in text, f"{name}.{key} still says default: null"
    assert nullable == set(NULL_LIFTS)
