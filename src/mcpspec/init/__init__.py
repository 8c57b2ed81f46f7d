"""`mcpspec init`: write a commented starter mcp-sandbox.yaml for the current project from catalog servers."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

from ruamel.yaml import YAML

from mcpspec.catalog import Entry, entries, get
from mcpspec.init.starter import DEFAULT_SERVERS, SCHEMA_FILE, build_starter, project_name
from mcpspec.output import write_atomically

__all__ = ["SCHEMA_FILE", "InitError", "render_starter", "write_schema_beside", "write_starter"]


class InitError(Exception):
    """A choice the user must fix: an unknown server name, or a file that exists without --force."""


def _chosen(names: Sequence[str]) -> list[Entry]:
    chosen: list[Entry] = []
    for name in names or DEFAULT_SERVERS:
        entry = get(name)
        if entry is None:
            known = ", ".join(known.name for known in entries())
            raise InitError(f"no server {name!r} in the catalog (known: {known})")
        if entry not in chosen:
            chosen.append(entry)
    return chosen


def render_starter(project: str, servers: Sequence[str] = ()) -> str:
    """The starter spec's text for `project` with the named catalog servers (filesystem when none)."""
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(build_starter(project_name(project), _chosen(servers)), out)
    text = out.getvalue()
    # Two spaces before an end-of-line comment; kept only if the data read back is the same.
    spaced = re.sub(r"(?m)(\S) (# .*)$", r"\1  \2", text)
    safe = YAML(typ="safe")
    return spaced if safe.load(spaced) == safe.load(text) else text


def write_starter(path: Path, servers: Sequence[str] = (), force: bool = False, project: str | None = None) -> str:
    """Write the starter to `path` atomically (refusing to replace a file without `force`); returns the text."""
    if path.is_dir():
        raise InitError(f"{path} is a directory: give the file to write with -o")
    if path.exists() and not force:
        raise InitError(f"{path} exists: pass --force to replace it")
    if not path.parent.is_dir():
        raise InitError(f"{path.parent} is not a directory")
    text = render_starter(project or path.resolve().parent.name, servers)
    write_atomically(path, text)
    return text


def write_schema_beside(spec: Path, force: bool = False) -> str:
    """Write the JSON Schema the starter's modeline names (SCHEMA_FILE, beside ``spec``): the
    schema's $id is not served yet, so editors read this copy (docs/schema.md). A copy that
    differs is replaced only with ``force``; returns what was done, for the user."""
    from mcpspec.spec.schema import render_schema

    schema = spec.parent / SCHEMA_FILE
    text = render_schema()
    if schema.is_file() and not schema.is_symlink():
        if schema.read_text(encoding="utf-8", errors="replace") == text:
            return f"{schema} is current"
        if not force:
            return f"kept {schema}, which differs from this version's schema: `mcpspec schema > {schema}` refreshes it"
    elif schema.exists() or schema.is_symlink():
        return f"left {schema} alone (not a regular file): `mcpspec schema > FILE` writes the schema"
    write_atomically(schema, text)
    return f"wrote {schema}, the schema its modeline names"
