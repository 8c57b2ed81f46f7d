"""Manifests as data, dumped as YAML: one comment header, then one document per object."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from mcpspec.ir.plan import Plan
from mcpspec.targets.common import header
from mcpspec.targets.k8s.names import namespace
from mcpspec.targets.yamlout import dump_all


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, with every string that holds a line break written double-quoted
    (its escapes keep each value on the lines it belongs to; a block scalar would not)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if any(c in value for c in "\n\r\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


# Objects that live in no namespace (and kustomize's own file).
UNNAMESPACED = frozenset({"Namespace", "Kustomization"})


def dump(plan: Plan, what: str, documents: Sequence[dict[str, Any]]) -> str:
    """A multi-document YAML file of ``documents`` under the generated header; every namespaced
    object names the project's namespace (an overlay's ``namespace:`` replaces it)."""
    documents = [_in_namespace(doc, namespace(plan)) for doc in documents]
    body = dump_all(documents, _Dumper, explicit_start=True)
    return "\n".join(header(plan, what)) + "\n" + body


def _in_namespace(doc: dict[str, Any], name: str) -> dict[str, Any]:
    if doc.get("kind") in UNNAMESPACED or "metadata" not in doc:
        return doc
    meta = doc["metadata"]
    return {**doc, "metadata": {"name": meta["name"], "namespace": name, **{k: v for k, v in meta.items() if k != "name"}}}


def load(text: str) -> list[dict[str, Any]]:
    """The documents of one generated file (empty ones left out)."""
    return [doc for doc in yaml.safe_load_all(text) if isinstance(doc, dict)]
