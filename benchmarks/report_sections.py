"""docs/performance.md is written by more than one benchmark: each owns a section between markers,
which the others keep when they write the file."""

from __future__ import annotations

import re
from pathlib import Path

from mcpspec.output import write_atomically

_SECTION = re.compile(r"\n<!-- section: (?P<name>[a-z-]+) -->\n.*?\n<!-- end of section -->\n", re.DOTALL)


def sections(text: str) -> dict[str, str]:
    """The marked sections of ``text``, by name, each with its markers."""
    return {match.group("name"): match.group(0) for match in _SECTION.finditer(text)}


def with_section(text: str, name: str, body: str) -> str:
    """``text`` with section ``name`` replaced by ``body`` (added at the end when missing)."""
    block = f"\n<!-- section: {name} -->\n{body.strip()}\n<!-- end of section -->\n"
    kept = sections(text)
    if name in kept:
        return text.replace(kept[name], block)
    return text.rstrip("\n") + "\n" + block


def write_keeping_sections(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, keeping the sections the file already has."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    for name, block in sections(old).items():
        if name not in sections(text):
            text = text.rstrip("\n") + "\n" + block
    write_atomically(path, text)


def write_section(path: Path, name: str, body: str) -> None:
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    write_atomically(path, with_section(old, name, body))
