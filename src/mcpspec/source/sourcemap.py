"""Where each logical path of a parsed file stands in its text.

The map keeps the positions of the composed YAML nodes (see
:mod:`mcpspec.source.positions`; not the nodes themselves) and walks them on
demand, remembering each anchor span it is asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from yaml.nodes import Node

from mcpspec.diagnostics import FILE_START, Span, SpecPath
from mcpspec.perf import quick_init
from mcpspec.source.positions import Positions

_COMMENT_START = re.compile(r"(?:^|(?<=[ \t]))#")


@quick_init
@dataclass(frozen=True, slots=True)
class Comment:
    """A YAML comment: where its ``#`` stands (1-based) and its text after the ``#``."""

    line: int
    col: int
    text: str
    own_line: bool

    @property
    def span(self) -> Span:
        """From the ``#`` to the end of the comment."""
        return Span(self.line, self.col, self.line, self.col + 1 + len(self.text))


@dataclass(slots=True)
class SourceMap:
    """Positions of every key and value of one parsed file.

    Lookups of a path that is not in the file (a missing key) fall back to the
    nearest ancestor, preferring the key that introduced it, so a message about
    something missing points at the mapping that lacks it.
    """

    file: str
    text: str
    positions: Positions = field(default_factory=Positions, repr=False)
    # The spans of the scalars whose text holds a '#' (the loader finds them while building the data).
    hash_scalars: list[Span] = field(default_factory=list, repr=False)
    # anchor_span's answers: lint of 10,000 servers asks for about 285,000 paths, 125,000 distinct.
    _anchors: dict[SpecPath, Span] = field(default_factory=dict, repr=False)
    _released: bool = field(default=False, repr=False)
    _lines: list[str] | None = field(default=None, repr=False)
    _comments: list[Comment] | None = field(default=None, repr=False)

    def __contains__(self, path: SpecPath) -> bool:
        return self._walk(path)[1]

    def value_span(self, path: SpecPath) -> Span:
        """The span of the value at ``path``, or of its nearest present ancestor."""
        return self._nearest(path, prefer_key=False)

    def key_span(self, path: SpecPath) -> Span:
        """The span of the key at ``path`` (the value's for list items), or the nearest ancestor's key."""
        return self._nearest(path, prefer_key=True)

    def anchor_span(self, path: SpecPath) -> Span:
        """Where a finding about ``path`` points: a scalar value itself; a mapping or
        list by the key that introduces it; a missing key by its nearest ancestor's key."""
        span = self._anchors.get(path)
        if span is None:
            span = self._anchors[path] = self._anchor_span(path)
        return span

    def _anchor_span(self, path: SpecPath) -> Span:
        positions = self._live_positions()
        return positions.span(positions.anchor(path)) if positions else FILE_START

    def release_nodes(self) -> None:
        """Drop the nodes' positions (tens of MB at 10,000 servers) once every position a
        command needs has been taken; asking for a position afterwards is a bug and raises."""
        self.positions = Positions()
        self.hash_scalars = []
        self._anchors.clear()
        self._released = True

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline ('' past the end)."""
        lines = self.lines()
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def lines(self) -> list[str]:
        """The file's lines, split once."""
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    def comments(self) -> list[Comment]:
        """Every comment in the file, in order; ``#`` inside scalars is not a comment."""
        if self._comments is None:
            self._comments = self._find_comments()
        return list(self._comments)

    def _find_comments(self) -> list[Comment]:
        if self._released:  # the scalars holding a '#' went with the nodes
            raise RuntimeError(f"{self.file}: comments were asked for after the node graph was released")
        masked = self.hash_scalars
        found: list[Comment] = []
        for index, line in enumerate(self.text.splitlines(), start=1):
            if "#" not in line:
                continue
            for match in _COMMENT_START.finditer(line):
                col = match.start() + 1
                if not any(_inside(span, index, col) for span in masked):
                    found.append(Comment(index, col, line[match.end() :], own_line=not line[: match.start()].strip()))
                    break
        return found

    def _nearest(self, path: SpecPath, prefer_key: bool) -> Span:
        positions, found_all, key, value = self._walk(path)
        if key is not None and (prefer_key or not found_all):
            return positions.span(key)
        if value is not None:
            return positions.span(value)
        return FILE_START

    def _live_positions(self) -> Positions:
        if self._released:
            raise RuntimeError(f"{self.file}: positions were asked for after the node graph was released")
        return self.positions

    def _walk(self, path: SpecPath) -> tuple[Positions, bool, int | None, int | None]:
        """Whether all of ``path`` exists, and the numbers of the key and value nodes of its
        last segment that does (the root: no key, the value 0; no key for a list item)."""
        positions = self._live_positions()
        if not positions:
            return positions, not path, None, None
        found, key, value = positions.locate(path)
        return positions, found == len(path), key, value


def node_span(node: Node) -> Span:
    """A node's span, 1-based, end exclusive."""
    start, end = node.start_mark, node.end_mark
    return Span(start.line + 1, start.column + 1, end.line + 1, end.column + 1)


def _inside(span: Span, line: int, col: int) -> bool:
    return (span.line, span.col) <= (line, col) < (span.end_line, span.end_col)
