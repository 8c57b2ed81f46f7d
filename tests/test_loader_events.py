"""The loader's event path gives the data and positions the composing path gives, and leaves the rest to it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import REPO
from mcpspec.source import loader
from mcpspec.source.events import build_from_events

SPECS = sorted({*REPO.glob("examples/**/*.yaml"), *REPO.glob("tests/corpus/**/*.yaml"), *REPO.glob("tests/realistic/**/*.yaml")})


def _events(text: str) -> object:
    builder = loader._Builder("f.yaml")
    return build_from_events(text, loader._Loader, builder.event_scalar, loader._IMPLICIT_FIRST, loader.MAX_DEPTH, loader.MAX_EXPANDED_NODES)


def _composed(text: str) -> tuple[object, object, object, object]:
    builder = loader._Builder("f.yaml")
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
