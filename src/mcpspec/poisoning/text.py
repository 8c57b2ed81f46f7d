"""Normalising text a server wrote before any pattern is matched against it.

An attacker dodges a phrase match with fullwidth letters, zero-width characters between letters,
Cyrillic look-alikes, odd spacing or case: :func:`fold` undoes all of these (NFKC, invisibles
stripped, casefold, look-alikes mapped to Latin, every run of non-alphanumerics one space), and
:func:`squeezed` drops the spaces too, for a phrase spelled out letter by letter.
"""

from __future__ import annotations

import functools
import re
import unicodedata

TAGS = range(0xE0000, 0xE0080)
VARIATION = (range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0))
BIDI = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})
ZERO_WIDTH = frozenset({0x00AD, 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x3164, 0xFEFF, 0xFFA0})
JOINERS = frozenset({0x200C, 0x200D})
ALLOWED_CONTROLS = frozenset("\n\r\t")

# Letters of other scripts drawn like Latin ones (and the digits read as letters): enough of
# Unicode's confusables to fold the look-alikes attackers use into the Latin phrase they spell.
_LOOKALIKES = {
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y",
    "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ɡ": "g", "ı": "i",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "ω": "w", "ѵ": "v", "ո": "n", "ս": "u", "օ": "o", "ց": "g", "ꭰ": "d", "ꮃ": "w",
}  # fmt: skip
_LOOKALIKE_TABLE = str.maketrans(_LOOKALIKES)
_DIGITS_AS_LETTERS = str.maketrans({"0": "o", "1": "l", "5": "s"})
_NON_WORD = re.compile(r"[^0-9a-z]+")


def is_invisible(code: int) -> bool:
    """A character that shows nothing (or reorders what is shown): tags, zero-width, bidi controls,
    variation selectors, other format characters and controls but newline, return and tab."""
    if code in TAGS or code in ZERO_WIDTH or code in BIDI or any(code in block for block in VARIATION):
        return True
    category = unicodedata.category(chr(code))
    return category == "Cf" or (category == "Cc" and chr(code) not in ALLOWED_CONTROLS)


_ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def visible(text: str) -> str:
    """``text`` without its invisible characters."""
    if text.isascii():  # the common case, without a look at each character
        return _ASCII_CONTROLS.sub("", text)
    return "".join(c for c in text if not is_invisible(ord(c)))


def invisible_at(text: str) -> list[int]:
    """The indices of the invisible characters of ``text``."""
    if text.isascii():
        return [match.start() for match in _ASCII_CONTROLS.finditer(text)]
    return [i for i, c in enumerate(text) if is_invisible(ord(c))]


def tag_payload(text: str) -> str:
    """The ASCII the Unicode tag characters of ``text`` spell (U+E0020..U+E007E mirror ASCII)."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def latin(text: str) -> str:
    """``text`` with the look-alike letters of other scripts mapped to the Latin ones they are drawn like."""
    return text.translate(_LOOKALIKE_TABLE)


@functools.lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """NFKC, invisibles stripped, casefolded, look-alikes mapped to Latin, punctuation and spacing one space."""
    folded = unicodedata.normalize("NFKC", visible(text)).casefold()
    folded = unicodedata.normalize("NFKC", folded).translate(_LOOKALIKE_TABLE)
    # Combining marks left after NFKC (an accent stacked on a letter) do not change the word.
    folded = "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))
    return _NON_WORD.sub(" ", folded).strip()


def squeezed(text: str) -> str:
    """:func:`fold` without the spaces: "i g n o r e" and "ig-nore" read "ignore"."""
    return fold(text).replace(" ", "")


def skeleton(name: str) -> str:
    """What a name looks like: folded, digits read as letters (0 o, 1 l, 5 s), ``rn`` as ``m``,
    ``vv`` as ``w``, separators dropped. Two names with one skeleton are confusable."""
    return squeezed(name).translate(_DIGITS_AS_LETTERS).replace("rn", "m").replace("vv", "w")


def scripts(text: str) -> set[str]:
    """The scripts of the letters of ``text`` (the first word of each letter's Unicode name)."""
    found = set()
    for char in text:
        if char.isalpha():
            found.add(unicodedata.name(char, "UNKNOWN").split(" ")[0])
    return found


def shown(text: str, limit: int = 80) -> str:
    """Text a server wrote, safe to print: printable ASCII (other characters as escapes), cut at ``limit``."""
    escaped = text.encode("ascii", "backslashreplace").decode("ascii")
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in escaped)
    return escaped if len(escaped) <= limit else escaped[: limit - 3] + "..."
