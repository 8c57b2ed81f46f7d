"""The loader's event path gives the data and positions the composing path gives, and leaves the rest to it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import REPO
from mcpspec.diagnostics import SpecError
from mcpspec.source import loader
from mcpspec.source.events import build_from_events

SPECS = sorted({*REPO.glob("examples/**/*.yaml"), *REPO.glob("tests/corpus/**/*.yaml"), *REPO.glob("tests/realistic/**/*.yaml")})


def _events(text: str) -> object:
    builder = loader._Builder("f.yaml", text)
    return build_from_events(text, loader._Loader, builder.event_scalar, loader._IMPLICIT_FIRST, loader.MAX_DEPTH, loader.MAX_EXPANDED_NODES)


def _composed(text: str) -> tuple[object, object, object, object]:
    builder = loader._Builder("f.yaml", text)
    data = builder.build(yaml.compose(text, Loader=loader._Loader), 0)
    return repr(data), list(builder.positions.marks), builder.positions.children, builder.hash_scalars


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_event_path_agrees_with_composing(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fast = _events(text)
    if fast is None:
        return  # not a plain file: the loader composes it
    assert isinstance(fast, tuple)
    data, positions, hash_scalars = fast
    assert (repr(data), list(positions.marks), positions.children, hash_scalars) == _composed(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",  # aliases
        "a: !!str 1\n",  # a tag
        "a: 1\na: 2\n",  # a duplicate key
        "<<: {a: 1}\n",  # a merge key
        "? [a]\n: 1\n",  # a list as a key
        "a: 1\n---\nb: 2\n",  # several documents
        "a: [1\n",  # a syntax error
        "a: 0x1G\nb: 2001-02-30\n",  # cannot be typed
        "a:" + " [" * 70 + "]" * 70 + "\n",  # too deep
    ],
)
def test_anything_but_plain_yaml_is_left_to_the_composing_path(text: str) -> None:
    assert _events(text) is None


def test_plain_scalars_are_typed_as_composing_types_them() -> None:
    text = "a:\nb: 1\nc: 1.5\nd: true\ne: null\nf: 2024-01-02\ng: '1'\nh: 1:30\ni: ~\nj: \"x#y\"  # c\n"
    fast = _events(text)
    assert isinstance(fast, tuple)
    assert (repr(fast[0]), list(fast[1].marks), fast[1].children, fast[2]) == _composed(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\r\nb:\r\n  - x\r\n",  # CRLF line ends
        "\ufeffa: 1\n",  # a byte-order mark
        "1: a\ntrue: b\nnull: c\n'': d\n",  # keys that would type as numbers, booleans, null; an empty key
        "'<<': 1\n\"<<\": 2\n",  # a quoted '<<' is a key like any other (and a duplicate once unquoted)
        "'a#b': 'c # d'\ne: |\n  f # g\n  h\n",  # '#' in keys, values and a block scalar
        "a: {b: [1, 2, {c: d}], e: []}\nf: {}\n",  # flow collections
        "名前: 値\nk: \"\\u2028\\t\"\n",  # wide characters; escapes in a quoted scalar
        "a:\n- 1\n-\n  - 2\n",  # an empty list item leading a nested list
        "- a\n- b: c\n",  # a list at the root
        "just a string\n",  # a scalar at the root
        "a: =\nb: <<\nc: [=, <<, =x]\n",  # YAML 1.1's 'value' and 'merge' scalars outside a key
    ],
)
def test_tricky_plain_files_read_the_same_both_ways(text: str) -> None:
    """What an attacker or an odd editor writes without anchors or tags: either the event path
    gives exactly what composing gives (data, positions, '#' spans), or it leaves the file to it."""
    fast = _events(text)
    try:
        composed = _composed(text)
    except (SpecError, yaml.YAMLError) as exc:  # the composing path refuses it: so must the loader, whatever the event path says
        assert fast is None, (text, exc)
        return
    if fast is not None:
        data, positions, hash_scalars = fast
        assert (repr(data), list(positions.marks), positions.children, hash_scalars) == composed


def test_a_plain_equals_sign_or_merge_marker_in_a_value_is_text() -> None:
    """YAML 1.1 resolves '=' to its 'value' type and '<<' to 'merge'; in a value both are text
    (the event path once crashed constructing them as timestamps; found by tests/test_fuzz_loader.py)."""
    data, _ = loader.parse_text("command: [echo, =, <<]\nnote: =\n")
    assert data == {"command": ["echo", "=", "<<"], "note": "="}


_LINE_BREAKS = [
    "a: 1\rb: 2\r",  # lone CR line ends
    "a: 'x\x85y'\nb: 1\n",  # NEL inside a scalar
    "a: \"p\u2028q\"\nb: 1\u2029c: 2\n",  # LS and PS
    "\ufeffa: 1\r\nb:\r\n  - \U0001f600x\r\n",  # a BOM, CRLF, a character outside the BMP
    "a: |\n  x\n  y\nb: >\n  z\n\n  w\nc: 'm\n\n  n'\nd: [1,\n  2]\n",  # block and multi-line scalars, a flow list over lines
]


@pytest.mark.parametrize("text", [*_LINE_BREAKS, *(path.read_text(encoding="utf-8") for path in sorted(REPO.glob("examples/*.yaml")))])
def test_positions_kept_as_indexes_give_libyaml_lines_and_columns(text: str) -> None:
    """Positions keep each node's character index and work out lines and columns later: every
    node's span must be the one libyaml's own marks give (line breaks of every kind, a BOM)."""
    from mcpspec.source.positions import Positions
    from mcpspec.source.sourcemap import node_span

    expected: list[object] = []

    class Recording(Positions):
        def add(self, node: yaml.Node, children: object = None) -> int:
            expected.append(node_span(node))
            return super().add(node, children)  # type: ignore[arg-type]

    builder = loader._Builder("f.yaml", text)
    builder.positions = Recording(text)
    builder.build(yaml.compose(text, Loader=loader._Loader), 0)
    assert expected and [builder.positions.span(number) for number in range(len(expected))] == expected
