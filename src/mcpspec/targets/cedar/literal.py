"""Cedar string literals: every value of the spec reaches a policy only through :func:`string`.

Printable ASCII stays as it is, but for ``"`` and ``\\``; every other character (line breaks, controls,
any non-ASCII letter) becomes ``\\u{HEX}``, so a policy line holds exactly what it reads as and a name
cannot end a literal, start a new statement or hide a character. ``*`` needs no escape: the policies
compare with ``==`` only, never ``like``, where it would be a wildcard. A lone surrogate has no Cedar
spelling: it is refused.
"""

from __future__ import annotations

from mcpspec.targets.escape import Unrepresentable


def string(value: str) -> str:
    """A Cedar string literal that reads back as exactly ``value`` (quotes included)."""
    out: list[str] = ['"']
    for char in value:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise Unrepresentable(f"a lone surrogate (U+{code:04X}) has no Cedar string literal")
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif 0x20 <= code <= 0x7E:
            out.append(char)
        else:
            out.append(f"\\u{{{code:x}}}")
    out.append('"')
    return "".join(out)
