"""Turn pydantic validation errors into positioned, readable diagnostics."""

from __future__ import annotations

import datetime
import difflib
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from mcpspec.diagnostics import Diagnostic, SpecPath, format_path
from mcpspec.source.sourcemap import SourceMap

UNKNOWN_KEY = "SC001"
MISSING_KEY = "SC002"
WRONG_TYPE = "SC003"
INVALID_VALUE = "SC004"
UNRESOLVED_REFERENCE = "SC005"
INCONSISTENT = "SC006"
CLIENT_CONFIG = "SC007"  # an MCP client's config given where a spec belongs (mcpspec.importer.recognize)

_QUOTED = re.compile(r"'([^']*)'")
_EXPECTED = {
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "date_type": "a date (YYYY-MM-DD)",
}


def describe(value: Any) -> str:
    """How a YAML value reads in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, datetime.date):
        return f"date {value.isoformat()}"
    return f"string {value!r}"


def diagnostics_from(error: ValidationError, data: Any, root: type[BaseModel], source: SourceMap) -> list[Diagnostic]:
    """One diagnostic per offending place, sorted by position."""
    seen: set[tuple[SpecPath, bool]] = set()
    found: list[Diagnostic] = []
    for item in error.errors(include_url=False):
        path, on_key = _data_path(item["loc"], data)
        kind = item["type"]
        if kind == "missing":
            parent = path[:-1]
            if (path, False) in seen:
                continue
            seen.add((path, False))
            span = source.key_span(parent) if parent else source.value_span(())
            where = f" in {format_path(parent)}" if parent else ""
            found.append(Diagnostic(source.file, span, MISSING_KEY, f"missing required key {path[-1]!r}{where}", path))
            continue
        if (path, on_key) in seen:
            continue  # a union reports once per member; the first message is enough
        seen.add((path, on_key))
        if kind == "extra_forbidden":
            found.append(Diagnostic(source.file, source.key_span(path), UNKNOWN_KEY, _unknown_key_message(path, data, root), path))
        elif kind in _EXPECTED:
            where = f"{format_path(path)}: " if path else "the file must be a mapping of keys such as 'version' and 'servers': "
            message = f"{where}expected {_EXPECTED[kind]}, got {describe(item['input'])}"
            if item["input"] is None and _source_text(source, path).strip() == "~":
                message += "; a bare ~ is YAML for null: write \"~\" (quoted) for the home directory"
            found.append(Diagnostic(source.file, source.value_span(path), WRONG_TYPE, message, path))
        else:
            if kind == "union_tag_invalid" and not on_key:
                path = (*path, str((item.get("ctx") or {}).get("discriminator", "")).strip("'"))  # point at the tag's value
                path = path if path in source else path[:-1]
            span = source.key_span(path) if on_key else source.value_span(path)
            message = str(item["msg"]).removeprefix("Value error, ") + _did_you_mean(item)
            what = f"key {path[-1]!r}" if on_key else format_path(path)
            found.append(Diagnostic(source.file, span, INVALID_VALUE, f"{what}: {message}", path))
    found.sort(key=lambda d: (d.span.line, d.span.col, d.code))
    return found


def _did_you_mean(item: Any) -> str:
    """``; did you mean 'dedicated'?`` for a misspelt choice (a literal or a transport type), else ''."""
    ctx = item.get("ctx") or {}
    if item["type"] == "literal_error":
        choices, given = ctx.get("expected", ""), item["input"]
    elif item["type"] == "union_tag_invalid":
        choices, given = ctx.get("expected_tags", ""), ctx.get("tag")
    else:
        return ""
    if not isinstance(given, str) or not isinstance(choices, str):
        return ""
    close = difflib.get_close_matches(given, _QUOTED.findall(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _source_text(source: SourceMap, path: SpecPath) -> str:
    span = source.value_span(path)
    line = source.line_text(span.line)
    return line[span.col - 1 : span.end_col - 1] if span.end_line == span.line else ""


def _data_path(loc: tuple[int | str, ...], data: Any) -> tuple[SpecPath, bool]:
    """Drop the union tags and type names pydantic puts in ``loc``: keep what indexes the data."""
    path: list[str | int] = []
    node = data
    for seg in loc:
        if seg == "[key]":
            return tuple(path), True
        if isinstance(node, dict) and isinstance(seg, str) and seg in node:
            node = node[seg]
            path.append(seg)
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            node = node[seg]
            path.append(seg)
        elif isinstance(node, dict) and isinstance(seg, str) and not _is_type_label(seg):
            path.append(seg)  # a missing key
            node = None
    return tuple(path), False


def _is_type_label(seg: str) -> bool:
    return seg in ("stdio", "http", "sse") or any(ch in seg for ch in "[]()") or seg in ("str", "int", "float", "bool")


def _unknown_key_message(path: SpecPath, data: Any, root: type[BaseModel]) -> str:
    key = str(path[-1])
    parent = path[:-1]
    allowed = allowed_keys(root, parent, data)
    where = format_path(parent) if parent else "the top level"
    message = f"unknown key {key!r} in {where}"
    if not allowed:
        return message
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
    if close:
        return f"{message}; did you mean {close[0]!r}?"
    return f"{message}; allowed keys: {', '.join(sorted(allowed))}"


def allowed_keys(root: type[BaseModel], path: SpecPath, data: Any) -> list[str]:
    """The keys the model at ``path`` accepts (by alias), or [] when it is not a model."""
    model = _model_at(root, path, data)
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_at(root: type[BaseModel], path: SpecPath, data: Any) -> type[BaseModel] | None:
    current: Any = root
    node = data
    for seg in path:
        current = _narrow(current, node)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next((f for n, f in current.model_fields.items() if (f.alias or n) == seg), None)
            if field is None:
                return None
            current = field.annotation
        elif typing.get_origin(current) in (dict, list):
            current = typing.get_args(current)[-1]
        else:
            return None
        if isinstance(node, dict):
            node = node.get(seg)
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            node = node[seg]
        else:
            node = None
    current = _narrow(current, node)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _narrow(annotation: Any, node: Any) -> Any:
    """Pick the member of an Annotated/Optional/Union annotation that fits the data node."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return annotation
    members = [_narrow(arg, node) for arg in typing.get_args(annotation) if arg is not type(None)]
    if isinstance(node, dict):
        models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
        for model in models:
            tag = model.model_fields.get("type")
            if tag is not None and node.get("type") in typing.get_args(tag.annotation):
                return model
        dicts = models or [m for m in members if typing.get_origin(m) is dict]
        return dicts[0] if dicts else None
    if isinstance(node, list):
        return next((m for m in members if typing.get_origin(m) is list), None)
    return members[0] if members else None
