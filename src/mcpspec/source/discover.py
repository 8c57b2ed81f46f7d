"""Which files `mcpspec lint` checks: the files it is given, the spec files under the
directories it is given, and ``-`` for standard input.

A directory is walked for files whose path matches :data:`SPEC_FILE_PATTERN`, the
same regular expression as the pre-commit hook's ``files:`` (``.pre-commit-hooks.yaml``;
a test keeps the two equal): ``mcp-sandbox.yaml``, ``mcp-sandbox.prod.yml``,
``team.mcp-sandbox.yaml``... in any folder. A ``.yaml``/``.yml`` file of another name
counts when its text says it is a spec (:func:`says_it_is_a_spec`): the schema modeline
``# yaml-language-server: $schema=...mcp-sandbox.schema.json`` in its first lines, or the
three keys every spec has (``version``, ``project``, ``servers``) at the top level. Folders
named in :data:`SKIPPED_DIRS` are not entered, nor are links to folders. A file named on the
command line is checked whatever its name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mcpspec.source.loader import UsageError

SPEC_FILE_PATTERN = r"(^|/)([^/]*\.)?mcp-sandbox[^/]*\.ya?ml$"
SPEC_FILE_NAMES = re.compile(SPEC_FILE_PATTERN)
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
YAML_SUFFIXES = (".yaml", ".yml")
MODELINE = re.compile(rb"^#\s*yaml-language-server:\s*\$schema=\S*mcp-sandbox\.schema\.json", re.MULTILINE)
MODELINE_LINES = 5
REQUIRED_KEYS = tuple(re.compile(rb"^" + key + rb"\s*:", re.MULTILINE) for key in (b"version", b"project", b"servers"))
SNIFF_LIMIT = 1 << 20  # a larger file of another name is not read to find out
STDIN_ARGUMENT = "-"
STDIN_NAME = "<stdin>"


@dataclass(frozen=True)
class SpecText:
    """A spec that is not a file on disk (standard input): its display name and its bytes."""

    name: str
    data: bytes


def is_spec_file(path: str) -> bool:
    """Whether a path (``/`` or ``\\`` separated) names a spec file by the hook's pattern."""
    return SPEC_FILE_NAMES.search(path.replace("\\", "/")) is not None


def says_it_is_a_spec(path: Path) -> bool:
    """Whether a YAML file of another name is a spec by its text: the schema modeline in its first
    lines, or ``version``, ``project`` and ``servers`` all at the top level. Unreadable: no."""
    try:
        if path.stat().st_size > SNIFF_LIMIT:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    head = b"\n".join(data.lstrip(b"\xef\xbb\xbf").splitlines()[:MODELINE_LINES])
    return MODELINE.search(head) is not None or all(key.search(data) for key in REQUIRED_KEYS)


def walk(directory: Path) -> Iterator[Path]:
    """The spec files under ``directory``, in a stable order (sorted within each folder)."""
    for root, dirs, files in os.walk(directory, onerror=_raise):
        dirs[:] = sorted(name for name in dirs if name not in SKIPPED_DIRS)
        base = Path(root)
        for name in sorted(files):
            relative = (base / name).relative_to(directory).as_posix()
            if is_spec_file(relative) or (name.lower().endswith(YAML_SUFFIXES) and says_it_is_a_spec(base / name)):
                yield base / name


def _raise(error: OSError) -> None:
    raise UsageError(f"{error.filename}: cannot read the directory: {error.strerror or error}")


def expand(arguments: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files as given, each directory replaced by the spec files under it.

    ``-`` is kept as is (the caller reads standard input for it). Raises UsageError for a
    directory that holds no spec file, so that ``mcpspec lint .`` never passes on nothing.
    """
    found: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if str(argument) == STDIN_ARGUMENT:
            if any(str(seen) == STDIN_ARGUMENT for seen in found):
                raise UsageError("'-' (standard input) is given more than once")
            found.append(path)
        elif path.is_dir():
            inside = list(walk(path))
            if not inside:
                raise UsageError(
                    f"{argument}: no spec files in this directory (names matching {SPEC_FILE_PATTERN}, or YAML files with the mcp-sandbox schema modeline"
                    f" or version, project and servers at the top; {', '.join(sorted(SKIPPED_DIRS))} are skipped)"
                )
            found.extend(inside)
        else:
            found.append(path)
    return list(dict.fromkeys(found))  # a file named twice (or also found in a folder) is checked once
