"""One import from start to end: read, convert (or merge), render. The CLI writes the result."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mcpspec.importer.clients import load
from mcpspec.importer.convert import convert
from mcpspec.importer.findings import ImportFinding
from mcpspec.importer.merge import load_spec, merge
from mcpspec.importer.reading import read_text
from mcpspec.importer.references import spec_name
from mcpspec.importer.spec_writer import document, dump, dump_new


@dataclass(frozen=True)
class Imported:
    text: str
    findings: list[ImportFinding]
    servers: int
    client: str


def default_project() -> str:
    name = spec_name(Path.cwd().name, "project")
    return name if re.fullmatch(r"[a-z][a-z0-9-]{0,39}", name) else "mcp-project"


def import_config(path: Path, client: str, project: str | None = None, into: Path | None = None) -> Imported:
    """The spec text of ``path``'s servers (merged into ``into`` when given) and the findings."""
    config = load(path, client)
    if into is not None:
        spec = load_spec(into)
        conversion = merge(spec, config)
        text = dump(spec) if conversion.servers else read_text(into)  # nothing added: the file as it was
    else:
        conversion = convert(config)
        text = dump_new(document(config, conversion, project or default_project()))
    return Imported(text, conversion.findings, len(conversion.servers), config.client)
