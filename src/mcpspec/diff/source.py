"""Where a side of a diff comes from: a file, or ``git:REV:PATH`` read with ``git show``.

A git revision is read as bytes and parsed by the loader under the name ``REV:PATH``, so
every diagnostic of that version points at ``REV:PATH:LINE:COL``. A revision or path git
cannot find is a :class:`UsageError` that names the source as the user wrote it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mcpspec.source.loader import MAX_FILE_BYTES, UsageError

GIT_PREFIX = "git:"


@dataclass(frozen=True, slots=True)
class Source:
    """One side of a diff: ``text`` is what the user wrote, ``name`` what diagnostics say."""

    text: str
    name: str
    path: Path | None  # a file on disk; None for a git revision
    revision: str | None = None
    inside: str | None = None  # the path inside the revision


def parse_source(text: str) -> Source:
    """Read the command-line form: ``git:REV:PATH`` or a file path."""
    if not text.startswith(GIT_PREFIX):
        return Source(text, text, Path(text))
    rest = text[len(GIT_PREFIX):]
    revision, colon, inside = rest.partition(":")
    if not colon or not revision or not inside:
        raise UsageError(f"{text}: a git source is git:REVISION:PATH (git:HEAD~1:mcp-sandbox.yaml)")
    if revision.startswith("-"):
        raise UsageError(f"{text}: a revision cannot start with '-'")
    return Source(text, f"{revision}:{inside}", None, revision, inside)


def read_revision(source: Source, cwd: Path | None = None) -> bytes:
    """The bytes of ``source.inside`` at ``source.revision`` (``git show``, run in ``cwd``).

    Raises UsageError naming the source when git is missing, the directory is no repository,
    the revision is unknown or the path is not a file in it.
    """
    assert source.revision is not None and source.inside is not None
    where = str(cwd) if cwd is not None else None
    inside = source.inside  # as git reads it: from the repository's root, or from cwd with ./
    env = {**os.environ, "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        commit = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{source.revision}^{{commit}}"], where, env)
    except FileNotFoundError:
        raise UsageError(f"{source.text}: git is not installed") from None
    if commit.returncode != 0:
        if _git(["rev-parse", "--git-dir"], where, env).returncode != 0:
            raise UsageError(f"{source.text}: not inside a git repository")
        raise UsageError(f"{source.text}: unknown revision {source.revision!r}")
    sha = commit.stdout.decode().strip()
    kind = _git(["cat-file", "-t", f"{sha}:{inside}"], where, env)
    if kind.returncode != 0:
        prefix = _git(["rev-parse", "--show-prefix"], where, env).stdout.decode().strip()
        hint = f" (a path is read from the repository's root: write ./{source.inside} or {prefix}{source.inside})" if prefix and not inside.startswith("./") else ""
        raise UsageError(f"{source.text}: no file {source.inside!r} in revision {source.revision}{hint}")
    if kind.stdout.decode().strip() != "blob":
        raise UsageError(f"{source.text}: {source.inside!r} is a directory in revision {source.revision}, not a spec file")
    size = _git(["cat-file", "-s", f"{sha}:{inside}"], where, env)
    if size.returncode == 0 and int(size.stdout.decode().strip() or 0) > MAX_FILE_BYTES:
        raise UsageError(f"{source.text}: the file is larger than {MAX_FILE_BYTES} bytes (16 MiB)")
    shown = _git(["cat-file", "blob", f"{sha}:{inside}"], where, env)
    if shown.returncode != 0:
        raise UsageError(f"{source.text}: git cannot read it: {_first_line(shown.stderr)}")
    return shown.stdout


def _git(args: list[str], cwd: str | None, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False, timeout=60)


def _first_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text.splitlines()[0] if text else "unknown error"
