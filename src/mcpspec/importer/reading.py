"""Read a client config file (JSON with comments, TOML or YAML) into plain Python data.

JSONC and JSON5 go through ``json5``, TOML through ``tomllib``, YAML through ruamel.yaml's
safe loader: no format is parsed by hand. A file that does not parse is an
``ImportFailure`` naming ``file:line:col``, never a traceback.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any


class ImportFailure(Exception):
    """The config cannot be imported: the message says where and why."""


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ImportFailure(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ImportFailure(f"{path}: is a directory, not a client config file") from None
    except UnicodeDecodeError as exc:
        raise ImportFailure(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ImportFailure(f"{path}: cannot read: {exc.strerror or exc}") from None


def syntax_of(path: Path) -> str:
    """json, toml or yaml, from the file name."""
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return "toml"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    return "json"


def parse(text: str, syntax: str, name: str) -> Any:
    """The data of a config's text in ``syntax`` (json, toml or yaml); ImportFailure, placed, when it is not valid."""
    reader = {"toml": _toml, "yaml": _yaml}.get(syntax, _json)
    try:
        return reader(text, name)
    except RecursionError:  # every parser recurses per level of nesting
        raise ImportFailure(f"{name}:1:1: not valid {syntax.upper()}: nested too deeply") from None


def _json(text: str, name: str) -> Any:
    import json5

    try:
        return json5.loads(text)
    except ValueError as exc:
        message = str(exc)
        found = re.search(r":(\d+) (.*)", message)
        if found:
            line = int(found.group(1))
            col = re.search(r"column (\d+)", message)
            raise ImportFailure(f"{name}:{line}:{col.group(1) if col else 1}: not valid JSON: {found.group(2)}") from None
        raise ImportFailure(f"{name}:1:1: not valid JSON: {message}") from None


def _toml(text: str, name: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{found.group(1)}:{found.group(2)}" if found else "1:1"
        raise ImportFailure(f"{name}:{where}: not valid TOML: {message.split(' (at ')[0]}") from None


def _yaml(text: str, name: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark is not None else "1:1"
        raise ImportFailure(f"{name}:{where}: not valid YAML: {exc.problem or exc.context}") from None
    except YAMLError as exc:
        raise ImportFailure(f"{name}:1:1: not valid YAML: {exc}") from None


def position(text: str, pointer: tuple[str | int, ...]) -> tuple[int, int]:
    """Approximate 1-based (line, col) of the value at ``pointer``: each key is searched for
    after the previous one (quoted as in JSON, or bare as in TOML and YAML). Where a key is not
    found, the last one found stands for it."""
    offset, found_at = 0, 0
    for part in pointer:
        if isinstance(part, int):
            continue
        pattern = re.compile(r'"' + re.escape(part) + r'"\s*:|(?<![\w.-])' + re.escape(part) + r"(?![\w-])\s*[:=\]]|\." + re.escape(part) + r"\]")
        match = pattern.search(text, offset)
        if match is None:
            continue
        found_at = match.start() + (1 if match.group(0).startswith(".") else 0)
        offset = match.end()
    line = text.count("\n", 0, found_at) + 1
    col = found_at - (text.rfind("\n", 0, found_at) + 1) + 1
    return line, col
