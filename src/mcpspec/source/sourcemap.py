"""The map from logical paths to source positions, kept beside the plain data."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mcpspec.diagnostics import FILE_START, Span, SpecPath

_COMMENT_START = re.compile(r"(?:^|(?<=[ \t]))#")


@dataclass(frozen=True, slots=True)
class Comment:
    """A YAML comment: where its ``#`` stands (1-based) and its text after the ``#``."""

    line: int
    col: int
    text: str
    own_line: bool


@dataclass(slots=True)
class SourceMap:
    """Positions of every key and value of one parsed file.

    ``values`` maps a logical path to the span of the value there, ``keys`` to
    the span of the mapping key that introduced it. Lookups of a path that is
    not in the file (a missing key) fall back to the nearest ancestor, so a
    message about something missing points at the mapping that lacks it.
    """

    file: str
    text: str
    values: dict[SpecPath, Span] = field(default_factory=dict)
    keys: dict[SpecPath, Span] = field(default_factory=dict)
    # Spans of scalars whose text holds a '#', which must not be read as comments.
    hash_scalars: list[Span] = field(default_factory=list)

    def __contains__(self, path: SpecPath) -> bool:
        return path in self.values

    def value_span(self, path: SpecPath) -> Span:
        """The span of the value at ``path``, or of its nearest present ancestor."""
        return self._nearest(path, prefer_key=False)

    def key_span(self, path: SpecPath) -> Span:
        """The span of the key at ``path`` (the value's for list items), or the nearest ancestor's key."""
        return self._nearest(path, prefer_key=True)

    def _nearest(self, path: SpecPath, prefer_key: bool) -> Span:
        probe = path
        first = True
        while probe:
            if (prefer_key or not first) and probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
            probe = probe[:-1]
            first = False
        return self.values.get((), FILE_START)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline ('' past the end)."""
        lines = self.text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def comments(self) -> list[Comment]:
        """Every comment in the file, in order; ``#`` inside scalars is not a comment."""
        found: list[Comment] = []
        masked = sorted(self.hash_scalars, key=lambda s: (s.line, s.col))
        for index, line in enumerate(self.text.splitlines(), start=1):
            if "#" not in line:
                continue
            for match in _COMMENT_START.finditer(line):
                col = match.start() + 1
                if not any(_inside(span, index, col) for span in masked):
                    text = line[match.end():]
                    found.append(Comment(index, col, text, own_line=not line[: match.start()].strip()))
                    break
        return found


def _inside(span: Span, line: int, col: int) -> bool:
    return (span.line, span.col) <= (line, col) < (span.end_line, span.end_col)
