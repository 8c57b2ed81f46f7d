"""The excesses over a boundary that a change adds or removes (``mcpspec diff --within``).

An excess is the same in both versions when its code, server and spec path are (as lint
findings are matched): a new one grew, one gone shrank, and one whose counterexample now reads
differently is neutral, with the new words.
"""

from __future__ import annotations

from mcpspec.boundary.check import KINDS, check
from mcpspec.boundary.excess import Excess
from mcpspec.diagnostics import format_path
from mcpspec.diff.model import Change
from mcpspec.ir.plan import Plan

CATEGORY = "boundary"


def _key(excess: Excess) -> tuple[str, str, str]:
    return (excess.code, excess.server, format_path(excess.path))


def _words(excess: Excess) -> str:
    return f"{excess.code} {KINDS[excess.code][0]} at {format_path(excess.path)}: {excess.message}"


def compare_excesses(old: Plan, new: Plan, boundary: Plan) -> list[Change]:
    """The excesses over ``boundary`` only one version has, and the reworded ones."""
    before = {_key(e): e for e in check(old, boundary)}
    after = {_key(e): e for e in check(new, boundary)}
    changes: list[Change] = []
    for key in after.keys() - before.keys():
        excess = after[key]
        changes.append(Change(excess.server, CATEGORY, "grew", f"new excess: {_words(excess)}", None, excess.code))
    for key in before.keys() - after.keys():
        excess = before[key]
        changes.append(Change(excess.server, CATEGORY, "shrank", f"excess removed: {_words(excess)}", excess.code, None))
    for key in before.keys() & after.keys():
        a, b = before[key], after[key]
        if a.message != b.message:
            changes.append(Change(b.server, CATEGORY, "neutral", f"excess now reads: {_words(b)}", a.message, b.message))
    return changes
