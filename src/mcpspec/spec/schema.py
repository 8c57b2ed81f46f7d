"""The JSON Schema of mcp-sandbox.yaml, generated from the models.

The committed copy lives in schemas/mcp-sandbox.schema.json (a test keeps it
in sync); editors use it through the ``# yaml-language-server: $schema=`` line,
the VS Code ``yaml.schemas`` setting or SchemaStore (docs/schema.md).

Three passes over what pydantic writes: constrained mapping keys become
``propertyNames``; optional fields lose the ``anyOf [T, null]`` shape (null stays
only where it means something, see ``NULL_LIFTS``); and the rules pydantic cannot
see are merged in from :mod:`mcpspec.spec.schema_rules`.
"""

from __future__ import annotations

import json
from typing import Any

# Stable: the major part changes only with the file format's `version`.
SCHEMA_ID = "https://mcpspec.dev/schema/1/mcp-sandbox.schema.json"
_NULL = {"type": "null"}


def build_schema() -> dict[str, Any]:
    from mcpspec.spec.models import NULL_LIFTS, Spec
    from mcpspec.spec.schema_rules import apply_rules

    schema = Spec.model_json_schema(by_alias=True, mode="validation")
    _name_keys_to_property_names(schema)
    definitions: dict[str, Any] = schema["$defs"]
    for name, node in [("Spec", schema), *definitions.items()]:
        for key, prop in node.get("properties", {}).items():
            node["properties"][key] = _optional(prop, (name, key) in NULL_LIFTS)
    apply_rules(definitions)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "mcp-sandbox.yaml",
        **{key: value for key, value in schema.items() if key != "title"},
    }


def render_schema() -> str:
    """The schema as the committed file holds it: two-space JSON with a final newline."""
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


def _optional(prop: dict[str, Any], keep_null: bool) -> dict[str, Any]:
    """``anyOf [T, null]`` with ``default: null`` -> ``T`` (or ``type: [T, null]`` where null lifts a limit).

    Leaving the key out is what "unset" means; offering null as well only makes editors
    report a wrong value as "is not of type 'null'".
    """
    members = prop.get("anyOf")
    if not isinstance(members, list) or _NULL not in members:
        return prop
    rest = [member for member in members if member != _NULL]
    outer = {key: value for key, value in prop.items() if key != "anyOf" and not (key == "default" and value is None)}
    if len(rest) > 1:
        return {**outer, "anyOf": [*rest, _NULL] if keep_null else rest}
    (only,) = rest
    merged = {**only, **outer}  # the field's own description wins over its type's
    if keep_null:
        if isinstance(only.get("type"), str):
            merged["type"] = [only["type"], "null"]
        else:
            return {**outer, "anyOf": [only, _NULL]}
    return merged


def _name_keys_to_property_names(node: Any) -> None:
    """pydantic writes constrained dict keys as patternProperties, which lets a bad key
    through silently; propertyNames plus additionalProperties rejects it."""
    if isinstance(node, dict):
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict) and len(patterns) == 1 and "additionalProperties" not in node:
            (pattern, value_schema), = patterns.items()
            del node["patternProperties"]
            node["propertyNames"] = {"pattern": pattern}
            node["additionalProperties"] = value_schema
        for value in node.values():
            _name_keys_to_property_names(value)
    elif isinstance(node, list):
        for item in node:
            _name_keys_to_property_names(item)
