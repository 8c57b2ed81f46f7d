"""Lay out a freshly imported spec so yamllint's default config has nothing to say about it:
a document start, two spaces before an end-of-line comment, and a comment that would push its
line past 80 characters moved onto lines of its own above it, wrapped, at the line's indentation."""

from __future__ import annotations

import re
import textwrap

WIDTH = 80


def tidy(text: str, width: int = WIDTH, start: bool = True) -> str:
    out: list[str] = []
    started = not start
    # A folded plain or quoted scalar ends its lines with the blank it folded at; that blank is no content
    # (YAML drops white space before a line break in flow scalars). In a block scalar (| or >) it would be.
    block = re.search(r"(:|-) [|>][-+0-9]*$", text, re.MULTILINE) is not None
    quote: str | None = None  # a quoted scalar still open at the end of the previous line
    for line in text.splitlines():
        line = line if block else line.rstrip()
        if not started and line and not line.startswith("#"):
            if line != "---":
                out.append("---")  # after the header comments, so a modeline stays on the first line
            started = True
        at, quote = comment_start(line, quote)
        if at is None or not line[:at].strip():
            out.append(line)
            continue
        content, comment = line[:at].rstrip(), line[at:].removeprefix("#").strip()
        joined = f"{content}  # {comment}"
        if len(joined) <= width:
            out.append(joined)
            continue
        indent = len(content) - len(content.lstrip())
        wrap = max(WIDTH - indent - 2, 30)
        out.extend(" " * indent + "# " + piece for piece in textwrap.wrap(comment, wrap, break_long_words=False, break_on_hyphens=False))
        out.append(content)
    return "\n".join(_indent_comments(out)) + "\n"


def _indent_comments(lines: list[str]) -> list[str]:
    """Every comment line indented like the content line it stands above (as yamllint's comments-indentation asks)."""
    out = list(lines)
    indent = 0
    for index in range(len(out) - 1, -1, -1):
        stripped = out[index].lstrip()
        if stripped.startswith("#"):
            out[index] = " " * indent + stripped
        elif stripped:
            indent = len(out[index]) - len(stripped)
    return out


def comment_start(line: str, quote: str | None = None) -> tuple[int | None, str | None]:
    """Where the comment of a YAML line starts (a ``#`` after a blank, or at the start, outside quotes),
    and the quote still open at its end; ``quote`` is the one open at its start (a folded quoted scalar)."""
    index = 0
    while index < len(line):
        char = line[index]
        if quote == '"':
            if char == "\\":
                index += 1
            elif char == '"':
                quote = None
        elif quote == "'":
            if char == "'":
                if line[index + 1 : index + 2] == "'":
                    index += 1
                else:
                    quote = None
        elif char in "\"'" and (index == 0 or line[index - 1] in " \t[{,:"):
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return index, None
        index += 1
    return None, quote
