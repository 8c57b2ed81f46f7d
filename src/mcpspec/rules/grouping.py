"""Findings grouped by the place in the file a value came from, and the phrases that name who they affect.

A value set once in ``defaults`` is one place in the file however many
servers inherit it: a rule reports that place once, naming every server.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.perf import quick_init
from mcpspec.rules.base import Finding, Related

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
Joiner = Callable[[Sequence[str]], str]

# How many items a listing shows before it says "and N more".
SHOWN = 3
# How many servers a merged finding names before it says "and N more".
NAMED_SERVERS = 5

# --- grouping ---


def grouped(pairs: Iterable[tuple[K, V]]) -> dict[K, list[V]]:
    """Each key's values, keys and values in first-seen order."""
    groups: dict[K, list[V]] = {}
    for key, value in pairs:
        groups.setdefault(key, []).append(value)
    return groups


def by_origin(servers: Iterable[EffectiveSandbox], dotted: str) -> dict[SpecPath, list[EffectiveSandbox]]:
    """The servers grouped by the spec path that set ``dotted`` for them, in first-seen order."""
    return grouped((server.origin(dotted), server) for server in servers)


def section_of(server: EffectiveSandbox, dotted: str) -> SpecPath:
    """The mapping that set ``dotted`` (``...process.background`` for ``process.background.allowed``).

    A missing sibling key (``max_jobs``) is reported there, next to the key that made it matter.
    """
    return server.origin(dotted)[:-1]


# --- naming servers and lists ---


def quoted(names: Iterable[str]) -> list[str]:
    """Each name in single quotes: ``'a'``."""
    return [f"'{name}'" for name in names]


def commas(items: Sequence[str], limit: int | None = None) -> str:
    """``a, b, c``, or ``a, b, c and 4 more`` past ``limit`` items."""
    shown = items if limit is None else items[:limit]
    rest = len(items) - len(shown)
    text = ", ".join(shown)
    return f"{text} and {rest} more" if rest else text


def listing(items: Sequence[str], limit: int | None = SHOWN) -> str:
    """``a``, ``a and b``, ``a, b and c``, or ``a, b, c and 4 more`` past ``limit`` items."""
    if len(items) == 1 or (limit is not None and len(items) > limit):
        return commas(items, limit)
    return f"{commas(items[:-1])} and {items[-1]}"


def in_full(items: Sequence[str]) -> str:
    """``a``, ``a and b`` or ``a, b and c``: every item, however many."""
    return listing(items, limit=None)


def named(noun: str, names: Iterable[str], joined: Joiner) -> str:
    """``secret 'a'``, or ``secrets`` and the quoted names as ``joined`` lists them (``commas``: ``'a', 'b'``)."""
    items = quoted(names)
    return f"{noun} {joined(items)}" if len(items) == 1 else f"{noun}s {joined(items)}"


def who(servers: Iterable[EffectiveSandbox], joined: Joiner) -> str:
    """``server 'a'``, or ``servers`` and the quoted names as ``joined`` lists them (``in_full``: ``'a' and 'b'``)."""
    return named("server", (server.name for server in servers), joined)


# --- findings merged across servers ---


@quick_init
@dataclass(frozen=True, slots=True)
class Draft:
    """A finding about one server, before findings at the same place are merged.

    ``template`` holds ``{who}`` for the server phrase and ``{singular|plural}``
    verb pairs, so that one message can name several servers.
    """

    path: SpecPath
    server: str
    template: str
    related: tuple[Related, ...] = ()
    items: tuple[str, ...] = ()


def merged(drafts: Iterable[Draft]) -> Iterator[Finding]:
    """One finding per place and message, naming every server it affects (each once)."""
    for (path, template), group in grouped(((draft.path, draft.template), draft) for draft in drafts).items():
        if len(group) == 1:  # most places hold one server's draft: nothing to merge
            related, items, servers = group[0].related, group[0].items, [group[0].server]
        else:
            related = tuple(item for draft in group for item in draft.related)
            items = tuple(item for draft in group for item in draft.items)
            servers = list(dict.fromkeys(draft.server for draft in group))
        yield Finding(path=path, message=render(template, servers), related=tuple(dict.fromkeys(related)), items=tuple(dict.fromkeys(items)))


_VERB = re.compile(r"\{([^{}|]*)\|([^{}|]*)\}")
_SERVER_LISTING = functools.partial(listing, limit=NAMED_SERVERS)


def render(template: str, servers: list[str]) -> str:
    """The message of a merged finding: ``template`` with its server phrase and verbs agreeing with ``servers``."""
    plural = len(servers) > 1
    phrase = named("server", servers, _SERVER_LISTING)
    return _VERB.sub(lambda match: match.group(2 if plural else 1), template).replace("{who}", phrase)
