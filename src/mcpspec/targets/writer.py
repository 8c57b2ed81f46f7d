"""Put a build on disk, or compare it with what is there.

Each file is written atomically. The manifest records what the build wrote and
the digest of each file, so a later build removes only files an earlier build
wrote, no longer emits, and nobody has edited since; anything else in the
directory is left alone.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

from mcpspec.output import write_atomically
from mcpspec.targets.build import MANIFEST, Build, file_digest

# A name a target writes: a file, or a file in one of the directories of the output that targets
# write in (a client's `.vscode/mcp.json`, the compose build under `compose/`). Each part may start
# with one dot, never two, so no part is `.` or `..`; no other directory (`.git/`) is ever touched.
OUTPUT_SUBDIRS = (".claude", ".codex", ".cursor", ".vscode", "compose", "seccomp")
_PART = r"\.?[A-Za-z0-9][A-Za-z0-9._@-]*"
_OWN_NAME = re.compile(rf"^(?:(?:{'|'.join(re.escape(name) for name in OUTPUT_SUBDIRS)})/)?{_PART}$")
# A manifest or a stale file larger than this was not written by a build: it is not read.
_READ_LIMIT = 256 << 20


class OutputError(Exception):
    """The output directory cannot be used."""


def _mode(build: Build, name: str) -> int:
    return 0o755 if name in build.executable else 0o644


def _regular_file(path: Path) -> int | None:
    """A file descriptor of ``path`` when it is a regular file of at most _READ_LIMIT bytes,
    opened without following a link or blocking on a FIFO; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > _READ_LIMIT:
        os.close(fd)
        return None
    return fd


def _previous_files(out: Path) -> dict[str, str | None]:
    """The files the last build's manifest lists, each with the digest it was written with (None: not recorded)."""
    fd = _regular_file(out / MANIFEST)
    if fd is None:
        return {}
    try:
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
        listed = data["files"]
        digests = data.get("digests", {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return {}
    if not isinstance(listed, list):
        return {}
    if not isinstance(digests, dict):
        digests = {}
    # Only plain names this generator could have written: a tampered manifest cannot reach outside.
    return {name: digest if isinstance(digest := digests.get(name), str) else None for name in listed if isinstance(name, str) and _OWN_NAME.fullmatch(name)}


class Written(NamedTuple):
    """What a build changed on disk: files written, stale files removed, and stale files kept
    because they were edited after the build that wrote them (or it recorded no digest)."""

    written: list[str]
    removed: list[str]
    kept: list[str]


def _unedited(path: Path, digest: str | None) -> bool:
    """Whether ``path`` is a regular file (not a link) that still holds exactly what a build wrote with ``digest``."""
    fd = _regular_file(path) if digest is not None else None
    if fd is None:
        return False
    try:
        with os.fdopen(fd, "rb") as handle:
            return file_digest(handle.read()) == digest  # at most _READ_LIMIT bytes
    except OSError:
        return False


def write_build(out: Path, build: Build) -> Written:
    """Write every file; remove the files an earlier build wrote that this one does not, unless
    they were edited since (those are kept and listed).

    A blocked build (a finding at or above its fail_on) is never written.
    """
    if build.blocked:
        raise OutputError(f"nothing written to {out}: findings at or above {build.fail_on} stop the build")
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {out}: {exc.strerror}") from None
    previous = _previous_files(out)
    stale = sorted(set(previous) - set(build.files))
    written: list[str] = []
    removed: list[str] = []
    kept: list[str] = []
    for name in build.files:
        # A directory the build writes in (.vscode, compose) that is a link would take the file out of the output.
        if "/" in name and (out / name).parent.is_symlink():
            raise OutputError(f"nothing written to {out}: {(out / name).parent} is a symbolic link, and a build writes only inside its output")
    with _Places(out) as places:
        try:
            for name in sorted(build.files):
                if name == MANIFEST:
                    continue
                path = places.for_writing(name)
                if _current(path) != (build.files[name], _mode(build, name)):
                    write_atomically(path, build.files[name], _mode(build, name))
                    written.append(name)
            for name in stale:
                place = places.for_removal(name)
                # A directory the build made may since have become a link: never follow it out of the output.
                if place is None or not place.is_file() or place.is_symlink():
                    continue
                if _unedited(place, previous[name]):
                    place.unlink()
                    removed.append(name)
                else:
                    kept.append(name)
            write_atomically(out / MANIFEST, build.files[MANIFEST], 0o644)
        except OSError as exc:
            raise OutputError(f"cannot write in {out}: {exc.strerror or exc}") from None
    return Written(written, removed, kept)


class _Places:
    """Where a build's names are, with each directory of the output it writes in (.vscode, compose)
    held open: a path through ``/proc/self/fd`` names the directory that was checked, so swapping
    it for a link while the build runs cannot take a write or a removal out of the output."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._held: dict[str, int | None] = {}

    def __enter__(self) -> _Places:
        return self

    def __exit__(self, *_: object) -> None:
        for fd in self._held.values():
            if fd is not None:
                os.close(fd)

    def for_writing(self, name: str) -> Path:
        """The path to write ``name`` at, its directory made when missing (OutputError: it is a link)."""
        found = self._path(name, create=True)
        if found is None:  # _open raises rather than give no directory when creating
            raise OutputError(f"cannot write {name} in {self.out}")
        return found

    def for_removal(self, name: str) -> Path | None:
        """The path to remove ``name`` at; None when its directory is missing or a link."""
        return self._path(name, create=False)

    def _path(self, name: str, create: bool) -> Path | None:
        if "/" not in name:
            return self.out / name
        directory, base = name.split("/", 1)
        if self._held.get(directory) is None:
            self._held[directory] = self._open(directory, create)
        fd = self._held[directory]
        return Path(f"/proc/self/fd/{fd}") / base if fd is not None else None

    def _open(self, directory: str, create: bool) -> int | None:
        place = self.out / directory
        if create:
            with contextlib.suppress(FileExistsError):
                place.mkdir(0o755)
        try:
            return os.open(place, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            if create:
                raise
            return None
        except OSError:  # a link (ELOOP) or not a directory
            if create:
                raise OutputError(f"nothing written to {self.out}: {place} is a symbolic link or not a directory, and a build writes only inside its output") from None
            return None


def _current(path: Path) -> tuple[str, int] | None:
    """The text and mode of the regular file at ``path`` (not a link, not larger than a build writes), or None."""
    fd = _regular_file(path)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read().decode("utf-8"), stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
    except (OSError, UnicodeDecodeError):
        return None


def drift(out: Path, build: Build) -> str:
    """A unified diff from what is on disk to what the build would write ('' when in sync)."""
    chunks: list[str] = []
    for name in sorted(build.files):
        want = build.files[name]
        current = _current(out / name)
        have = current[0] if current is not None else ""
        if current is None:
            chunks.append(f"missing: {out / name}\n")
        if have != want:
            chunks.extend(difflib.unified_diff(have.splitlines(True), want.splitlines(True), f"{out / name} (on disk)", f"{out / name} (built)"))
        elif current is not None and current[1] != _mode(build, name):
            chunks.append(f"mode of {out / name}: {oct(current[1])} on disk, {oct(_mode(build, name))} built\n")
    previous = _previous_files(out)
    for name in sorted(set(previous) - set(build.files)):
        path = out / name
        if path.parent != out and path.parent.is_symlink():
            continue  # a build does not follow it either
        if path.is_file() and not path.is_symlink():
            fate = "a build would remove it" if _unedited(path, previous[name]) else "edited since, so a build would keep it"
            chunks.append(f"stale: {path} (an earlier build wrote it; {fate})\n")
    return "".join(chunk if chunk.endswith("\n") else chunk + "\n" for chunk in chunks)
