"""Read a unit file as systemd does, for the settings the reader looks at.

systemd's rules, as its ``conf-parser`` and ``extract_first_word`` apply them: a
line ending in a backslash continues on the next (the backslash becomes a
space); lines starting with ``#`` or ``;`` are comments; ``Key=value`` splits at
the first ``=``. A setting's value is split into words where separators outside
quotes end a word; quotes (``"`` or ``'``) may open anywhere in a word; a
backslash escapes the next character, and with C unescaping ``\\n``, ``\\xNN``,
``\\NNN``, ``\\uNNNN``... stand for one character. Specifiers (``%i``, ``%t``,
``%d``, ``%%``) are resolved in each word after it is split.
"""

from __future__ import annotations

from collections.abc import Mapping

WHITESPACE = " \t\n\r"
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   "\\": "\\", '"': '"', "'": "'", "s": " "}


class UnitSyntaxError(ValueError):
    """Text systemd would refuse to load (the reader does not guess what it means)."""


Unit = dict[str, list[tuple[str, str]]]


def parse_unit(text: str) -> Unit:
    """Section -> [(key, raw value)] in file order."""
    sections: Unit = {}
    current: list[tuple[str, str]] | None = None
    pending = ""
    lines = text.split("\n")
    for index, raw in enumerate(lines):
        line = raw.strip()
        if line[:1] in ("#", ";") or (not pending and not line):
            continue  # a comment inside a continued line is dropped too
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 and index < len(lines) - 1:
            pending += line[:-1] + " "
            continue
        line, pending = (pending + line).strip(), ""
        if trailing % 2:
            line = line[:-1]
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        if "=" not in line or current is None:
            raise UnitSyntaxError(f"not a Key=value line in a section: {line[:60]!r}")
        key, value = line.split("=", 1)
        current.append((key.strip(), value.strip()))
    return sections


def values(unit: Unit, section: str, key: str) -> list[str]:
    """Every raw value of ``key`` in ``section``, in order (a later one may reset earlier ones)."""
    return [value for k, value in unit.get(section, []) if k == key]


def last(unit: Unit, section: str, key: str) -> str | None:
    found = values(unit, section, key)
    return found[-1] if found else None


def extract_word(text: str, separators: str = WHITESPACE, unquote: bool = True, cunescape: bool = False,
                 coalesce: bool = True) -> tuple[str | None, str, str]:
    """One word off the front of ``text``: (word or None at the end, the rest, the separator that ended it)."""
    i = 0
    if coalesce:
        while i < len(text) and text[i] in separators:
            i += 1
    if i >= len(text):
        return None, "", ""
    word: list[str] = []
    quote = ""
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text):
                raise UnitSyntaxError("a backslash at the end of a value")
            if cunescape:
                char, used = _cunescape_one(text, i + 1)
                word.append(char)
                i += 1 + used
            else:
                word.append(text[i + 1])
                i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
            else:
                word.append(c)
        elif unquote and c in "\"'":
            quote = c
        elif c in separators:
            rest = text[i + 1:]
            return "".join(word), rest, c
        else:
            word.append(c)
        i += 1
    if quote:
        raise UnitSyntaxError("an unterminated quote")
    return "".join(word), "", ""


def split_words(text: str, separators: str = WHITESPACE, unquote: bool = True, cunescape: bool = False) -> list[str]:
    out: list[str] = []
    while True:
        word, text, _ = extract_word(text, separators, unquote, cunescape)
        if word is None:
            return out
        out.append(word)


def _cunescape_one(text: str, i: int) -> tuple[str, int]:
    """The character a C escape at ``text[i:]`` (after the backslash) stands for, and how many characters it used."""
    c = text[i]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], 1
    for prefix, digits, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if c == prefix:
            code = _number(text[i + 1:i + 1 + digits], digits, base)
            return _char(code), 1 + digits
    if c in "01234567":
        return _char(_number(text[i:i + 3], 3, 8)), 3
    raise UnitSyntaxError(f"an unknown escape \\{c}")


def _number(digits: str, count: int, base: int) -> int:
    try:
        if len(digits) != count:
            raise ValueError
        return int(digits, base)
    except ValueError:
        raise UnitSyntaxError(f"a bad escape sequence {digits!r}") from None


def _char(code: int) -> str:
    if code == 0:
        raise UnitSyntaxError("systemd refuses a NUL from an escape")
    return chr(code)


def resolve_specifiers(word: str, known: Mapping[str, str]) -> str:
    """``%%`` becomes ``%``; ``%X`` becomes ``known[X]``; another specifier is an error here."""
    out: list[str] = []
    i = 0
    while i < len(word):
        c = word[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(word):
            raise UnitSyntaxError("a lone % at the end of a word")
        spec = word[i + 1]
        if spec == "%":
            out.append("%")
        elif spec in known:
            out.append(known[spec])
        else:
            raise UnitSyntaxError(f"specifier %{spec} is not one this reader resolves")
        i += 2
    return "".join(out)


def parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "yes", "y", "true", "t", "on"):
        return True
    if lowered in ("0", "no", "n", "false", "f", "off"):
        return False
    raise UnitSyntaxError(f"not a boolean: {value!r}")


_SIZE_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}
_TIME_UNITS = {
    "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400, "w": 604800, "week": 604800, "weeks": 604800,
    "M": 2629800, "month": 2629800, "months": 2629800, "y": 31557600, "year": 31557600, "years": 31557600, "": 1,
}


def parse_size(value: str) -> int | None:
    """Bytes of a MemoryMax=-style size (1024-based suffixes); None for infinity or a percentage."""
    text = value.strip()
    if text in ("", "infinity") or text.endswith("%"):
        return None
    number = text.rstrip("BKMGTPE")
    unit = text[len(number):]
    if unit not in _SIZE_UNITS:
        raise UnitSyntaxError(f"not a size: {value!r}")
    return int(float(number) * _SIZE_UNITS[unit])


def parse_timespan(value: str) -> float | None:
    """Seconds of a time span (``4h 30min``, ``90``); None for infinity."""
    text = value.strip()
    if text == "infinity":
        return None
    total = 0.0
    i = 0
    if not text:
        raise UnitSyntaxError("an empty time span")
    while i < len(text):
        while i < len(text) and text[i] in WHITESPACE:
            i += 1
        start = i
        while i < len(text) and (text[i].isdigit() or text[i] == "."):
            i += 1
        number = text[start:i]
        while i < len(text) and text[i] in WHITESPACE:
            i += 1
        unit_start = i
        while i < len(text) and text[i].isalpha():
            i += 1
        unit = text[unit_start:i]
        if not number or unit not in _TIME_UNITS:
            raise UnitSyntaxError(f"not a time span: {value!r}")
        total += float(number) * _TIME_UNITS[unit]
    return total


def parse_percent(value: str) -> float | None:
    """A percentage (``150%``, ``12.5%``) as a number; None when empty."""
    text = value.strip()
    if not text:
        return None
    if not text.endswith("%"):
        raise UnitSyntaxError(f"not a percentage: {value!r}")
    return float(text[:-1])
