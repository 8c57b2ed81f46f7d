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
    "approvals", "workspace", "waivers", "boundary", "findings", "attack-paths", "enforcement",
)
PROJECT = ""  # the scope of a change that concerns no single server
# Lint's verdict on the new version, not a privilege: counted apart from privilege changes.
FINDING_CATEGORIES = ("findings", "attack-paths")

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
    boundary: str | None = None  # the boundary whose excesses are compared (category "boundary")

    @property
    def grew(self) -> bool:
        """Whether a privilege grew or a finding is new (or newly waived): what --fail-on-growth fails on."""
        return any(c.effect == "grew" for c in self.changes)

    @property
    def shrank(self) -> bool:
        return any(c.effect == "shrank" for c in self.changes)

    @property
    def privileges(self) -> tuple[Change, ...]:
        """The changes to what the servers may do: every change but new, resolved or reworded findings."""
        return tuple(c for c in self.changes if c.category not in FINDING_CATEGORIES)

    @property
    def verdict(self) -> str:
        """What happened to privileges alone; findings are counted apart (:meth:`finding_counts`)."""
        return VERDICTS[(any(c.effect == "grew" for c in self.privileges), any(c.effect == "shrank" for c in self.privileges))]

    def counts(self) -> dict[str, int]:
        """Privilege changes by effect (findings apart)."""
        return {effect: sum(1 for c in self.privileges if c.effect == effect) for effect in EFFECTS}

    def excess_counts(self) -> dict[str, int]:
        """Excesses over the boundary the change adds, removes and rewords (a new one counts as growth)."""
        kinds = {"grew": "added", "shrank": "removed", "neutral": "reworded"}
        out = dict.fromkeys(kinds.values(), 0)
        for change in self.changes:
            if change.category == "boundary":
                out[kinds[change.effect]] += 1
        return out

    def finding_counts(self) -> dict[str, dict[str, int]]:
        """``{"findings": {...}, "attack-paths": {...}}``, each counting what is new, resolved,
        newly waived, no longer waived and reworded."""
        out = {category: dict.fromkeys(FINDING_KINDS, 0) for category in FINDING_CATEGORIES}
        for change in self.changes:
            if change.category in FINDING_CATEGORIES:
                out[change.category][_finding_kind(change)] += 1
        return out

    def by_server(self) -> list[tuple[str, list[Change]]]:
        """The changes grouped by scope: the project's first, then servers by name."""
        groups: dict[str, list[Change]] = {}
        for change in self.changes:
            groups.setdefault(change.server, []).append(change)
        return sorted(groups.items())


FINDING_KINDS = ("new", "resolved", "waived", "unwaived", "reworded")


def _finding_kind(change: Change) -> str:
    """compare_findings writes a new finding with old None, a resolved one with new None, a waiver
    that came or went with booleans, and a reworded one as neutral."""
    if change.effect == "neutral":
        return "reworded"
    if change.effect == "grew":
        return "new" if change.old is None else "waived"
    return "resolved" if change.new is None else "unwaived"


def ordered(changes: Sequence[Change]) -> tuple[Change, ...]:
    """Changes in their stable order, duplicates dropped."""
    return tuple(sorted(dict.fromkeys(changes), key=Change.sort_key))
