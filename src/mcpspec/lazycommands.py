"""Commands that typer builds only when they are used.

Typer turns every registered command into a click command (reading each function's signature
and evaluating its annotations) before it parses a single argument: for mcpspec's fourteen
commands that is a tenth of a small lint. :class:`LazyCommands` holds the registrations and
builds a command the first time the group asks for it by name, so ``mcpspec lint`` builds
``lint`` alone; ``--help`` and shell completion, which list every command, still build them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, TypeVar

import typer
from typer import _click
from typer.core import MarkupMode, TyperGroup
from typer.main import get_command_from_info, get_command_name
from typer.models import CommandInfo

_F = TypeVar("_F", bound=Callable[..., Any])


class LazyCommands(MutableMapping[str, _click.Command]):
    """Command name -> click command, each built from its registration on first use."""

    def __init__(self, registered: list[CommandInfo], *, pretty_exceptions_short: bool, rich_markup_mode: MarkupMode) -> None:
        self._pending = {info.name or get_command_name(_callback_name(info)): info for info in registered}
        self._built: dict[str, _click.Command] = {}
        self._pretty_exceptions_short = pretty_exceptions_short
        self._rich_markup_mode = rich_markup_mode

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self._built:
            info = self._pending[name]  # KeyError for an unknown name, as a dict
            self._built[name] = get_command_from_info(info, pretty_exceptions_short=self._pretty_exceptions_short, rich_markup_mode=self._rich_markup_mode)
        return self._built[name]

    def __setitem__(self, name: str, command: _click.Command) -> None:
        self._pending.pop(name, None)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._pending and name not in self._built:
            raise KeyError(name)
        self._pending.pop(name, None)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        # Registration order, as typer lists them (commands added later come last).
        return iter(list(self._pending) + [name for name in self._built if name not in self._pending])

    def __len__(self) -> int:
        return len(set(self._pending) | set(self._built))

    def __contains__(self, name: object) -> bool:
        return name in self._pending or name in self._built


def _callback_name(info: CommandInfo) -> str:
    assert info.callback is not None, "a command must have a callback function"
    return info.callback.__name__


class LazyTyper(typer.Typer):
    """A Typer app whose group builds its commands on first use (see :class:`LazyCommands`).

    Its commands are kept apart from ``registered_commands``, which typer would build up front,
    and handed to its group, an instance of :meth:`group_class`, when typer creates it.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.lazy_commands: list[CommandInfo] = []
        super().__init__(cls=self.group_class(), **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[_F], _F]:
        register = super().command(*args, **kwargs)

        def decorator(function: _F) -> _F:
            register(function)
            self.lazy_commands.append(self.registered_commands.pop())
            return function

        return decorator

    def group_class(self) -> type[TyperGroup]:
        """The group class whose instances take this app's commands."""
        app = self

        class Group(TyperGroup):
            def __init__(self, **attrs: Any) -> None:
                super().__init__(**attrs)
                built = dict(self.commands)  # none, unless typer learns to add some itself
                self.commands = LazyCommands(app.lazy_commands, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=self.rich_markup_mode)
                self.commands.update(built)

        return Group
