"""The loader's fast path: plain data and positions straight from libyaml's events.

Composing a 10,000-server file first builds a node graph of about 250 MB, and
the memory it leaves behind stays fragmented for the rest of the run. Most
files are plain YAML: one document, no anchors or aliases, no explicit tags,
no error. For those, this module builds the same data and the same positions
(see :mod:`mcpspec.source.positions`) from the parser's event stream, one
event at a time. Anything else (an error of any kind included) returns None,
and the loader composes the file, which reports exactly what it always did.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from mcpspec.diagnostics import Span
from mcpspec.source.positions import Positions

# Typed plain scalars ('1', 'true', '1.0'...) by text: a file repeats few of them.
_TYPED_LIMIT = 10_000


class _Fallback(Exception):
    """The file needs the composing path."""


def build_from_events(
    text: str, loader: Any, typed: Any, maybe_typed: frozenset[str], max_depth: int, max_nodes: int
) -> tuple[Any, Positions, list[Span]] | None:
    """The data, positions and '#'-holding scalar spans of ``text``, or None when the file is not plain.

    ``loader`` is the loader class whose parser reads the text. A plain scalar that is empty or starts
    with one of ``maybe_typed`` is read by ``typed(value, start_mark, end_mark)`` as the composing path reads it
    (raising ValueError where that path reports an error); any other scalar is a string.
    """
    parser = loader(text)
    try:
        # Only '&' makes an anchor and only '!' a tag: without either, no event needs checking for them.
        guarded = "&" in text or "!" in text
        return _build(text, parser.get_event, typed, maybe_typed, guarded, max_depth, max_nodes)
    except (_Fallback, yaml.YAMLError, ValueError, RecursionError):
        return None
    finally:
        parser.dispose()


def _build(text: str, get: Any, typed: Any, maybe_typed: frozenset[str], guarded: bool, max_depth: int, max_nodes: int) -> tuple[Any, Positions, list[Span]]:
    if type(get()) is not StreamStartEvent or type(get()) is not DocumentStartEvent:
        raise _Fallback
    positions = Positions(text)
    marks, children = positions.marks, positions.children
    mark, child = marks.append, children.append
    hash_scalars: list[Span] = []
    # The containers around the open one: (data, children's numbers, node number); the innermost last.
    stack: list[tuple[Any, Any, int]] = []
    container: Any = None  # the open container's data (None: the root is next)
    numbers: Any = None  # its children's numbers
    in_mapping = False
    key: str | None = None  # a mapping's key waiting for its value
    root: Any = None
    while True:
        event = get()
        kind = type(event)
        if kind is ScalarEvent:
            if guarded and (event.anchor is not None or event.tag is not None):
                raise _Fallback
            start, end = event.start_mark, event.end_mark
            mark(start.index)
            mark(end.index)
            child(None)
            value = event.value
            if "#" in value:
                hash_scalars.append(Span(start.line + 1, start.column + 1, end.line + 1, end.column + 1))
            if in_mapping and key is None:
                if value in container or (value == "<<" and event.implicit[0]):
                    raise _Fallback  # a duplicate or merge key: the composing path reports it
                key = value
                continue
            if (not value or value[0] in maybe_typed) and event.implicit[0]:
                value = typed(value, start, end)
            if in_mapping:
                numbers[key] = len(children) - 1
                container[key] = value
                key = None
            elif container is not None:
                numbers.append(len(children) - 1)
                container.append(value)
            else:
                root = value
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            # At max_depth its items would be too deep: the composing path says so (or not, when it is empty).
            if (guarded and (event.anchor is not None or event.tag is not None)) or len(stack) >= max_depth or (in_mapping and key is None):
                raise _Fallback  # an anchor, a tag, too deep, or a mapping or list as a key
            number = len(children)
            mark(event.start_mark.index)
            mark(0)  # its end, when it closes
            new: Any = {} if kind is MappingStartEvent else []
            new_numbers: Any = {} if kind is MappingStartEvent else []
            child(new_numbers)
            if in_mapping:
                numbers[key] = number
                container[key] = new
            elif container is not None:
                numbers.append(number)
                container.append(new)
            else:
                root = new
            stack.append((container, numbers, number))
            container, numbers, key, in_mapping = new, new_numbers, None, kind is MappingStartEvent
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            container, numbers, number = stack.pop()
            marks[2 * number + 1] = event.end_mark.index
            key, in_mapping = None, type(container) is dict
            if len(children) > max_nodes:
                raise _Fallback  # the composing path counts the nodes it builds and stops at max_nodes
        elif kind is DocumentEndEvent:
            break
        else:  # an alias, or anything unexpected
            raise _Fallback
    if type(get()) is not StreamEndEvent:
        raise _Fallback  # another document
    return root, positions, hash_scalars
