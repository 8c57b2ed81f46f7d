"""What a diff reports: changes, each classified, and one verdict.

A change *grew* when the new version grants more than the old (more reach, fewer checks,
a new finding), *shrank* when it grants less, and is *neutral* when it changes something a
reviewer should see without widening or narrowing anything (a different command, a new
env value).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Effect = Literal["grew", "shrank", "neutral"]
EFFECTS: tuple[Effect, ...] = ("grew", "shrank", "neutral")

# The kinds of change, in the order a server's changes are listed.
CATEGORIES = (
    "server", "agents", "placement", "trust", "transport", "runtime", "identity", "resources", "env",
    "egress", "secrets", "mounts", "process", "lifecycle", "limits", "logging", "tools",
    "approvals", "workspace", "waivers", "findings", "attack-paths", "enforcement",
)
PROJECT = ""  # the scope of a change that concerns no single server

VERDICTS = {
    (True, True): "privileges grew and shrank",
    (True, False): "privileges grew",
    (False, True): "privileges shrank",
    (False, False): "privileges unchanged",
}


@dataclass(frozen=True, slots=True)
class Change:
    """One change: where (a server, or ``PROJECT``), what kind, which way, and in words.

    ``old`` and ``new`` are the values compared, as plain JSON data (None when absent).
    """

    server: str
    category: str
    effect: Effect
    message: str
    old: object = None
    new: object = None

    def sort_key(self) -> tuple[str, int, str]:
        return (self.server, CATEGORIES.index(self.category), self.message)


@dataclass(frozen=True, slots=True)
class Diff:
    """The changes from ``old`` to ``new`` (the names as the user gave them)."""

    old: str
    new: str
    changes: tuple[Change, ...]
    target: str | None = None

    @property
    def grew(self) -> bool:
        return any(c.effect == "grew" for c in self.changes)

    @property
    def shrank(self) -> bool:
        return any(c.effect == "shrank" for c in self.changes)

    @property
    def verdict(self) -> str:
        return VERDICTS[(self.grew, self.shrank)]

    def counts(self) -> dict[str, int]:
        return {effect: sum(1 for c in self.changes if c.effect == effect) for effect in EFFECTS}

    def by_server(self) -> list[tuple[str, list[Change]]]:
        """The changes grouped by scope: the project's first, then servers by name."""
        groups: dict[str, list[Change]] = {}
        for change in self.changes:
            groups.setdefault(change.server, []).append(change)
        return sorted(groups.items())


def ordered(changes: Sequence[Change]) -> tuple[Change, ...]:
    """Changes in their stable order, duplicates dropped."""
    return tuple(sorted(dict.fromkeys(changes), key=Change.sort_key))
