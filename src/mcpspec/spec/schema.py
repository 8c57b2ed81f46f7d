"""The JSON Schema of mcp-sandbox.yaml, generated from the models.

The committed copy lives in schemas/mcp-sandbox.schema.json (a test keeps it
in sync); editors use it through the ``# yaml-language-server: $schema=`` line.
"""

from __future__ import annotations

import json
from typing import Any

SCHEMA_ID = "urn:mcpspec:schema:mcp-sandbox:1"


def build_schema() -> dict[str, Any]:
    from mcpspec.spec.models import Spec

    schema = Spec.model_json_schema(by_alias=True, mode="validation")
    _name_keys_to_property_names(schema)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "mcp-sandbox.yaml",
        **{key: value for key, value in schema.items() if key != "title"},
    }


def render_schema() -> str:
    """The schema as the committed file holds it: two-space JSON with a final newline."""
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


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
