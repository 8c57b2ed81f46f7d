"""Comment lines in generated files: any text, one line, nothing in it live.

Generated files carry values in comments (the spec's file name in every
header). Shells, squid and systemd end a comment at a line break, and a file
name can hold one; so every comment that holds a value is written by
:func:`comment_line`, which leaves no character that could end the line.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode categories written as escapes in a comment: control characters (every line
# break str.splitlines knows but U+2028 and U+2029), format characters (bidirectional
# overrides that make a line read differently from what it is), the line and
# paragraph separators, and unpaired surrogates (an undecodable file name byte).
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_ESCAPE = re.compile(r"\\(\\|t|n|r|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def _visible(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    if unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def comment_text(text: str) -> str:
    """``text`` as printable characters on one line: a backslash, and every control,
    format or separator character, becomes a visible escape (``\\n``, ``\\x1b``,
    ``\\u2028``), so nothing in it can end a comment line. :func:`uncomment_text` reverses it."""
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text  # nothing to escape: printable ASCII holds no control, format or separator character
    return "".join(_visible(char) for char in text)


def uncomment_text(text: str) -> str:
    """The text :func:`comment_text` was given."""
    named = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
    return _ESCAPE.sub(lambda m: named.get(m.group(1)) or chr(int(m.group(1)[1:], 16)), text)


def comment_line(text: str, marker: str = "#") -> str:
    """One comment line (``# text``) of any text; the only way a target writes a comment that holds a value."""
    return f"{marker} {comment_text(text)}" if text else marker
