"""`--help` that names values as users write them (``PATH...``, ``--format FORMAT``), not as
Python types (typer's ``files... <list[Path]>``, ``--fail-on <str>``).

Every command of :data:`mcpspec.cli.app` is a :class:`PlainHelpCommand` (``App.command``
makes it the default), which gives each of its parameters the plain display below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from typer.core import TyperArgument, TyperCommand, TyperOption

from mcpspec.lazycommands import LazyTyper

_F = TypeVar("_F", bound=Callable[..., Any])


def value_name(param: TyperOption | TyperArgument) -> str:
    """The metavar, else the long option's or the argument's name in capitals (``--fail-on`` -> ``FAIL_ON``)."""
    if param.metavar is not None:
        return param.metavar
    longest = max(param.opts, key=len).lstrip("-") if param.opts else (param.name or "value")
    return longest.replace("-", "_").upper()


class _PlainOption(TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        return value_name(self) + ("..." if self.nargs != 1 else "")


class _PlainArgument(TyperArgument):
    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the name column already says what the value is

    def _rich_display_name(self) -> str:
        return value_name(self) + ("..." if self.multiple or self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"


_PLAIN: dict[type, type] = {TyperOption: _PlainOption, TyperArgument: _PlainArgument}


class PlainHelpCommand(TyperCommand):
    """A command whose help shows value names, never Python type names."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            plain = _PLAIN.get(type(param))
            if plain is not None:
                param.__class__ = plain


class App(LazyTyper):
    """A Typer app whose commands are PlainHelpCommands unless told otherwise, each built on first use."""

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Callable[[_F], _F]:
        return super().command(*args, cls=cls or PlainHelpCommand, **kwargs)
