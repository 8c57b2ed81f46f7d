"""Config-file problems as spec errors read: ``FILE:LINE:COL: message``, with a did-you-mean
for a misspelt key (``selectt`` -> ``select``), a value out of a fixed set (``fail-on: hgih``)
and an unknown rule name.

A `.mcpspec.yaml` is positioned through its SourceMap; a pyproject.toml, which tomllib reads
without positions, by finding the key in the text of its ``[tool.mcpspec]`` tables.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcpspec.diagnostics import PathSegment, format_path
from mcpspec.source.sourcemap import SourceMap

Position = tuple[int, int]
Locate = Callable[[Sequence[PathSegment], bool], Position]  # (path, the key rather than the value)
_TABLE = re.compile(r"^\s*\[\s*([^\]\[]+?)\s*\]\s*(#.*)?$")


def suggestion(word: str, choices: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the closest choice, or ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def problems(error: ValidationError, raw_keys: dict[str, str], fields: Iterable[str], data: dict[str, Any]) -> list[tuple[tuple[PathSegment, ...], bool, str]]:
    """(path in the file, whether it points at a key, message) for each problem pydantic found.

    ``raw_keys`` maps a normalized top-level key (``fail_on``) back to its spelling in the file
    (``fail-on``); ``fields`` are the keys a config may hold, as the docs write them.
    """
    allowed = [name.replace("_", "-") for name in fields]
    found: list[tuple[tuple[PathSegment, ...], bool, str]] = []
    for item in error.errors(include_url=False):
        loc = list(item["loc"])
        if loc and isinstance(loc[0], str):
            loc[0] = raw_keys.get(loc[0], loc[0])
        path = tuple(loc)
        where = format_path(path)
        if item["type"] == "extra_forbidden":
            key = str(path[-1])
            choices = allowed if len(path) == 1 else []
            found.append((path, True, f"unknown key {key!r}{suggestion(key.replace('_', '-'), choices)} (keys: {', '.join(allowed)})"))
        elif item["type"] == "literal_error":
            expected = re.findall(r"'([^']*)'", str((item.get("ctx") or {}).get("expected", "")))
            value = _value_at(data, path)
            hint = suggestion(value, expected) if isinstance(value, str) else ""
            found.append((path, False, f"{where}: {value!r} is not one of {', '.join(expected)}{hint}"))
        else:
            found.append((path, False, f"{where}: {item['msg'][0].lower()}{item['msg'][1:]}"))
    return found


def _value_at(data: Any, path: Sequence[PathSegment]) -> Any:
    for segment in path:
        if isinstance(data, dict) and segment in data:
            data = data[segment]
        elif isinstance(data, list) and isinstance(segment, int) and 0 <= segment < len(data):
            data = data[segment]
        else:
            return None
    return data


def yaml_locator(source: SourceMap) -> Locate:
    def locate(path: Sequence[PathSegment], key: bool) -> Position:
        span = source.key_span(tuple(path)) if key else source.anchor_span(tuple(path))
        return span.line, span.col

    return locate


def toml_locator(text: str, data: dict[str, Any]) -> Locate:
    """Where a key (or a list item) of ``[tool.mcpspec]`` is written in a pyproject.toml."""
    lines = text.splitlines()

    def locate(path: Sequence[PathSegment], key: bool) -> Position:
        table = "tool.mcpspec"
        start = _table_line(lines, table)
        if start is None:
            return 1, 1
        where: Position = (start + 1, 1)
        line = start + 1
        for depth, segment in enumerate(path):
            if isinstance(segment, int):
                item = _value_at(data, path[: depth + 1])
                found = _find(lines, line, _quoted(str(item)) if isinstance(item, str) else None, table)
            else:
                table_start = _table_line(lines, f"{table}.{segment}")
                if table_start is not None:
                    where, line, table = (table_start + 1, lines[table_start].index("[") + 1), table_start + 1, f"{table}.{segment}"
                    continue
                found = _find(lines, line, rf"(^|[\s{{,])(?P<at>[\"']?{re.escape(segment)}[\"']?)\s*=", table)
            if found is None:
                break
            where = found
            line = found[0] - 1  # the next segment may be on the same line (an inline table or array)
        return where

    return locate


def _quoted(value: str) -> str:
    return rf"(?P<at>[\"']{re.escape(value)}[\"'])"


def _table_line(lines: list[str], name: str) -> int | None:
    for number, line in enumerate(lines):
        match = _TABLE.match(line)
        if match and re.sub(r"\s*\.\s*", ".", match.group(1)).replace('"', "") == name:
            return number
    return None


def _find(lines: list[str], first: int, pattern: str | None, table: str) -> Position | None:
    """The first match of ``pattern`` at or after 0-based line ``first``, before the next table."""
    if pattern is None:
        return None
    compiled = re.compile(pattern)
    for number in range(first, len(lines)):
        if _TABLE.match(lines[number]):
            return None
        match = compiled.search(lines[number])
        if match:
            return number + 1, match.start("at") + 1
    return None


def format_problems(path: Path, located: list[tuple[Position, str]]) -> str:
    """One ``FILE:LINE:COL: message`` line per problem, in file order."""
    return "\n".join(f"{path}:{line}:{col}: {message}" for (line, col), message in sorted(located, key=lambda item: item[0]))
