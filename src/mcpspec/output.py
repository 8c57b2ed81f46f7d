"""Writing outputs atomically: a reader never sees half a file, and a failed write
leaves what was there before."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from pathlib import Path

_SEQUENCE = itertools.count()


def write_atomically(path: Path, text: str | Iterable[str], mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (a string, or its pieces in order) in one step; ``mode`` None
    keeps an existing file's mode (0644 when new)."""
    directory = path.parent if str(path.parent) else Path(".")
    # O_EXCL on a name unique to this process and call: cheaper than mkstemp's random retries,
    # which matters when a build writes thousands of files.
    fd = -1
    while fd < 0:
        temporary = str(directory / f".{path.name}.{os.getpid()}.{next(_SEQUENCE)}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # left by a crashed process that had the same pid
            continue
    try:
        if mode is None:
            try:
                mode = path.stat().st_mode & 0o777
            except FileNotFoundError:
                mode = 0o644
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            fd = -1
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
        os.replace(temporary, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        Path(temporary).unlink(missing_ok=True)
        raise
