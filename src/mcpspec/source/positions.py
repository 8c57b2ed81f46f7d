"""The positions of a composed YAML node graph, kept without the nodes.

libyaml's composer gives every node a Python object and two marks: at 10,000
servers that graph takes about 250 MB, most of a lint's memory. The loader
numbers the nodes as it builds the data (a key just before its value) and
keeps, per node, its start and end in one flat array, and per mapping or
list the numbers of its children; no node outlives the loading.
"""

from __future__ import annotations

from array import array

from yaml.nodes import Node

from mcpspec.diagnostics import Span

# A position packed in one integer: the 0-based line above, the 0-based column below.
_SHIFT = 32
_COLUMN = (1 << _SHIFT) - 1

# A mapping's children by key (each the number of the value; its key is the number before),
# a list's children in order, or None for a scalar.
Children = dict[str, int] | list[int] | None


class Positions:
    """Node number -> span, and each container's children, for every node of one document."""

    __slots__ = ("children", "marks")

    def __init__(self) -> None:
        # Filled by add(), or directly by the event builder (mcpspec.source.events).
        self.marks = array("Q")  # two per node: start, end
        self.children: list[Children] = []

    def add(self, node: Node, children: Children = None) -> int:
        """Number ``node`` (the next number) and keep its span; ``children`` is filled in by the caller."""
        start, end = node.start_mark, node.end_mark
        marks = self.marks
        marks.append(start.line << _SHIFT | start.column)
        marks.append(end.line << _SHIFT | end.column)
        self.children.append(children)
        return len(self.children) - 1

    def __len__(self) -> int:
        return len(self.children)

    def span(self, number: int) -> Span:
        """A node's span, 1-based, end exclusive."""
        start, end = self.marks[2 * number], self.marks[2 * number + 1]
        return Span((start >> _SHIFT) + 1, (start & _COLUMN) + 1, (end >> _SHIFT) + 1, (end & _COLUMN) + 1)

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
