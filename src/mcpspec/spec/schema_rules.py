"""Language rules that the models and the resolver check in code, restated as JSON Schema.

pydantic writes a schema for the shape of each model; the rules below are the ones it
cannot see (a model validator, a check in :mod:`mcpspec.ir.resolve`). Each entry names
the definition it is merged into and the check it mirrors; tests/test_schema_agreement.py
runs every bad file through both and fails when one rejects what the other accepts.

What a schema cannot say stays with the linter: references between sections (an
agent's server, a secret's use, a workspace dir, a waiver's path), uniqueness of a
field across list items (two mounts at one path), and YAML itself (duplicate keys,
merge keys, tags).
"""

from __future__ import annotations

from typing import Any

from mcpspec.spec.patterns import SECRET_REF_PATTERNS

_HTTP = {"enum": ["http", "sse"]}
_EXTERNAL = {"properties": {"placement": {"const": "external"}}, "required": ["placement"]}
# Keys an external server must not set (resolve.check_server): mcpspec does not run it.
_NOT_FOR_EXTERNAL = ("image", "package", "command", "workdir", "mounts", "runtime", "process")


def _secret_ref(provider: str) -> dict[str, Any]:
    return {
        "if": {"properties": {"provider": {"const": provider}}, "required": ["provider"]},
        "then": {"properties": {"ref": {"pattern": SECRET_REF_PATTERNS[provider]}}},
    }


RULES: dict[str, dict[str, Any]] = {
    # SecretForm._exactly_one: `as` is {env: ...} or {file: ...}, never both, never neither.
    "SecretForm": {"oneOf": [{"required": ["env"]}, {"required": ["file"]}]},
    # resolve.check_workspace: only a tmpfs directory can be size-limited.
    "WorkspaceDir": {
        "dependentRequired": {"size": ["tmpfs"]},
        "if": {"required": ["size"]},
        "then": {"properties": {"tmpfs": {"const": True}}},
    },
    # resolve.check_lifecycle: a sandbox starts from a template or a snapshot, not both.
    "Lifecycle": {"dependentSchemas": {"template": {"not": {"required": ["snapshot"]}}}},
    # resolve.check_secrets: each provider has its own form of reference.
    "Secret": {"allOf": [_secret_ref(provider) for provider in SECRET_REF_PATTERNS]},
    "SecretSource": {"allOf": [_secret_ref(provider) for provider in SECRET_REF_PATTERNS]},
    # resolve.check_server and resolve_transport.
    "Server": {
        "if": _EXTERNAL,
        # external: reached over HTTP at a URL, and nothing about how to run it.
        "then": {
            "required": ["transport"],
            "properties": {
                "transport": {"properties": {"type": _HTTP}, "required": ["type", "url"]},
                **dict.fromkeys(_NOT_FOR_EXTERNAL, False),
            },
        },
        # run by mcpspec: something to launch, and the port an HTTP server listens on.
        "else": {
            "anyOf": [{"required": ["command"]}, {"required": ["image"]}],
            "properties": {
                "transport": {
                    "if": {"properties": {"type": _HTTP}, "required": ["type"]},
                    "then": {"required": ["port"]},
                }
            },
        },
    },
}


def apply_rules(definitions: dict[str, Any]) -> None:
    """Merge :data:`RULES` into the schema's ``$defs`` (a rule never replaces a keyword pydantic wrote)."""
    for name, keywords in RULES.items():
        target = definitions[name]
        clash = set(keywords) & set(target)
        if clash:
            raise ValueError(f"schema rule for {name} would replace {sorted(clash)}")
        target.update(keywords)
