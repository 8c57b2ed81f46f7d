"""Path arguments as a condition sees them: every reading a server might give the string, or none.

A path argument is a string the server will open; what it means there depends on the server (does it
decode percent-escapes, maybe twice? treat a backslash as a separator? fold Unicode compatibility
forms?). So the string is read every way a server plausibly reads it, and a path condition holds only
when it holds for every reading (:func:`readings`). A reading that cannot be judged from the string alone is None
(unknown), which a condition treats fail-closed:

- NUL anywhere, an empty string, or more than ``MAX_PATH_CHARS`` characters;
- percent-escapes that do not decode as UTF-8 (an overlong ``%c0%ae`` is ``.`` to a lax decoder);
- a relative path (the server's working directory is not the condition's business);
- any ``..`` segment: lexical resolution is wrong under symlinks (``a/link/..`` is not ``a``), so
  no ``..`` is resolved and none is let through.

``.`` segments, repeated slashes and a trailing slash are dropped. Symlinks inside the allowed
area cannot be known from the arguments: the mounts decide what a link may reach.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

MAX_PATH_CHARS = 4096
_SURROGATE = re.compile("[\ud800-\udfff]")  # percent-escapes that are not UTF-8 (overlong %c0%ae): no telling what a decoder makes of them
MAX_READINGS = 64
MAX_NAME_CHARS = 255  # NAME_MAX: no longer segment names a file


def segments(path: str) -> tuple[str, ...] | None:
    """The segments of an absolute POSIX path, or None when it cannot be judged (see the module)."""
    if not path or len(path) > MAX_PATH_CHARS or "\x00" in path or not path.startswith("/") or _SURROGATE.search(path):
        return None
    parts = tuple(part for part in path.split("/") if part not in ("", "."))
    if ".." in parts or any(len(part) > MAX_NAME_CHARS for part in parts):
        return None
    return parts


def readings(value: str, casefold: bool = False) -> list[tuple[str, ...] | None]:
    """The segments of each way a server may read ``value``: every string reached from it by any
    sequence of NFKC folding (fullwidth solidus U+FF0F becomes ``/``), percent-decoding (twice
    encoded is decoded twice) and backslashes read as separators; with more than ``MAX_READINGS``
    of them, one reading is unknown."""
    forms, cut = spellings(value)
    found: list[tuple[str, ...] | None] = [segments(form.casefold() if casefold else form) for form in sorted(forms)]
    return [*found, None] if cut else found


def spellings(value: str) -> tuple[set[str], bool]:
    """``value`` and every string reached from it by NFKC folding, percent-decoding and backslashes read
    as slashes, in any order; and whether more than ``MAX_READINGS`` were left unread."""
    forms = {value}
    todo = [value]
    while todo and len(forms) <= MAX_READINGS:
        form = todo.pop()
        for other in (unicodedata.normalize("NFKC", form), unquote(form, errors="surrogateescape"), form.replace("\\", "/")):
            if other not in forms:
                forms.add(other)
                todo.append(other)
    return forms, bool(todo)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` (a path glob or prefix in the spec) is not written in normal form; None when it is."""
    if not pattern.startswith("/"):
        return "a path condition is absolute: it starts with /"
    if "\x00" in pattern or "\\" in pattern or "%" in pattern:
        return "a path condition holds no NUL, backslash or percent sign (an argument with them is read every way a server may read it)"
    if unicodedata.normalize("NFKC", pattern) != pattern:
        return "a path condition is written in Unicode NFKC form (arguments are compared in every form)"
    parts = pattern.split("/")[1:]
    if pattern != "/" and any(part in ("", ".", "..") for part in parts):
        return "a path condition has no empty, '.' or '..' segment and no trailing slash"
    return None
