"""The positions of a composed YAML node graph, kept without the nodes.

libyaml's composer gives every node a Python object and two marks: at 10,000
servers that graph takes about 250 MB, most of a lint's memory. The loader
numbers the nodes as it builds the data (a key just before its value) and
keeps, per node, its start and end in one flat array, and per mapping or
list the numbers of its children; no node outlives the loading.

A position is kept as libyaml's character index (one attribute of its mark,
where line and column are two: reading them is a tenth of loading a big file)
and turned into a line and column only when asked, from where each line of
the text starts. libyaml breaks lines at CR LF, CR, LF, NEL, LS and PS, and
does not count a byte-order mark.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

from yaml.nodes import Node

from mcpspec.diagnostics import Span

_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")

# A mapping's children by key (each the number of the value; its key is the number before),
# a list's children in order, or None for a scalar.
Children = dict[str, int] | list[int] | None


class Positions:
    """Node number -> span, and each container's children, for every node of one document."""

    __slots__ = ("_line_starts", "_text", "children", "marks")

    def __init__(self, text: str = "") -> None:
        # Filled by add(), or directly by the event builder (mcpspec.source.events).
        self.marks = array("Q")  # two per node: the character indexes of its start and end
        self.children: list[Children] = []
        self._text = text  # the text the indexes count in
        self._line_starts: list[int] | None = None  # the index each line starts at, made on first use

    def add(self, node: Node, children: Children = None) -> int:
        """Number ``node`` (the next number) and keep its span; ``children`` is filled in by the caller."""
        marks = self.marks
        marks.append(node.start_mark.index)
        marks.append(node.end_mark.index)
        self.children.append(children)
        return len(self.children) - 1

    def __len__(self) -> int:
        return len(self.children)

    def span(self, number: int) -> Span:
        """A node's span, 1-based, end exclusive."""
        starts = self._line_starts if self._line_starts is not None else self._index_lines()
        start, end = self.marks[2 * number], self.marks[2 * number + 1]
        line = bisect_right(starts, start) - 1
        end_line = line if line + 1 == len(starts) or end < starts[line + 1] else bisect_right(starts, end) - 1
        return Span(line + 1, start - starts[line] + 1, end_line + 1, end - starts[end_line] + 1)

    def _index_lines(self) -> list[int]:
        text = self._text
        bom = 1 if text.startswith("\ufeff") else 0  # libyaml skips it: its indexes are one less than the text's
        starts = [0]
        if "\r" in text or "\x85" in text or "\u2028" in text or "\u2029" in text:
            starts += [found.end() - bom for found in _LINE_BREAK.finditer(text)]
        else:
            at = -bom
            for line in text.split("\n")[:-1]:
                at += len(line) + 1
                starts.append(at)
        self._line_starts = starts
        return starts

    def locate(self, path: tuple[str | int, ...]) -> tuple[int, int | None, int]:
        """How many segments of ``path`` exist from the root, and the numbers of the key (None for
        the root and list items) and the value the last of them leads to."""
        children = self.children
        key: int | None = None
        value = 0
        found = 0
        for segment in path:
            kids = children[value]
            if type(kids) is dict:
                step = kids.get(segment) if type(segment) is str else None
                if step is None:
                    break
                key, value = step - 1, step
            elif type(kids) is list and type(segment) is int and 0 <= segment < len(kids):
                key, value = None, kids[segment]
            else:
                break
            found += 1
        return found, key, value

    def anchor(self, path: tuple[str | int, ...]) -> int:
        """The node a finding about ``path`` points at: the scalar value the whole path leads to;
        otherwise the key of the last segment that exists (a mapping or list by the key that
        introduces it, a missing key by its nearest ancestor's), or a value that has no key (a
        list item, the root)."""
        found, key, value = self.locate(path)
        if key is None or (found == len(path) and self.children[value] is None):
            return value
        return key
