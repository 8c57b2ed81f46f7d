"""perf.quick_init: a frozen, slotted dataclass built by the quick __init__ is the one its own __init__ builds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from mcpspec.diagnostics import Span
from mcpspec.ir.plan import EffectiveMount
from mcpspec.perf import quick_init


@dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: str = "b"
    c: dict[str, int] = field(default_factory=dict)
    d: tuple[int, ...] = field(default=(), compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class Quick:
    a: int
    b: str = "b"
    c: dict[str, int] = field(default_factory=dict)
    d: tuple[int, ...] = field(default=(), compare=False)


@pytest.mark.parametrize(("args", "kwargs"), [((1,), {}), ((1, "x"), {}), ((1,), {"c": {"k": 1}}), ((), {"a": 2, "d": (3,)}), ((1, "x", {"k": 2}, (4,)), {})])
def test_same_fields_defaults_and_factories(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    plain, quick = Plain(*args, **kwargs), Quick(*args, **kwargs)
    assert dataclasses.astuple(plain) == dataclasses.astuple(quick)
    assert Quick(1).c is not Quick(1).c  # a fresh value from the factory each time


def test_still_frozen_hashable_and_replaceable() -> None:
    span = Span(1, 2, 3, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        span.line = 5  # type: ignore[misc]
    assert span == Span(line=1, col=2, end_line=3, end_col=4) and hash(span) == hash(Span(1, 2, 3, 4))
    assert dataclasses.replace(span, col=9) == Span(1, 9, 3, 4)
    assert EffectiveMount("host", "/a", "/b", "ro", ("servers",), "/a").origins == {}
    with pytest.raises(TypeError):
        Span(1, 2, 3)  # type: ignore[call-arg]


def test_refuses_what_it_does_not_handle() -> None:
    @dataclass(frozen=True)
    class NotSlotted:
        a: int

    with pytest.raises(TypeError):
        quick_init(NotSlotted)
