"""New and resolved lint findings between two versions, graph findings (attack paths) apart.

A finding is the same in both versions when its rule and its logical path are: line numbers
never count, so moving text around resolves nothing. A finding whose message changed (an attack
path now found through other hops, a list of servers that grew) is reported as neutral, with
the new message. A finding that a waiver or
an inline suppression newly covers is reported as waived (grew: a risk is accepted), one that
lost its waiver as unwaived.
"""

from __future__ import annotations

from mcpspec.diagnostics import format_path
from mcpspec.diff.model import PROJECT, Change
from mcpspec.rules.engine import Result
from mcpspec.rules.registry import find

Key = tuple[str, str]


def _key(result: Result) -> Key:
    """Rule and logical path: a rule reports one finding per place (an attack path, the route it
    found first), so the same place with another message is the same finding, reworded."""
    return (result.code, format_path(result.path))


def _server(result: Result) -> str:
    path = result.path
    if len(path) > 1 and path[0] == "servers" and isinstance(path[1], str):
        return path[1]
    return PROJECT


def _category(result: Result) -> str:
    rule = find(result.code)
    return "attack-paths" if rule is not None and rule.category == "graph" else "findings"


def _words(result: Result) -> str:
    where = format_path(result.path) or "the file"
    return f"{result.code} [{result.severity}] {result.slug} at {where}: {result.message}"


def compare_findings(old: list[Result], new: list[Result]) -> list[Change]:
    """The findings only one version has, and the ones whose waiver came or went."""
    before = {_key(r): r for r in old}
    after = {_key(r): r for r in new}
    changes: list[Change] = []
    for key in after.keys() - before.keys():
        result = after[key]
        noun = "new attack path" if _category(result) == "attack-paths" else "new finding"
        waived = " (waived)" if result.suppression is not None else ""
        changes.append(Change(_server(result), _category(result), "grew", f"{noun}{waived}: {_words(result)}", None, result.code))
    for key in before.keys() - after.keys():
        result = before[key]
        noun = "attack path closed" if _category(result) == "attack-paths" else "finding resolved"
        changes.append(Change(_server(result), _category(result), "shrank", f"{noun}: {_words(result)}", result.code, None))
    for key in before.keys() & after.keys():
        a, b = before[key], after[key]
        if a.message != b.message:
            noun = "attack path now reads" if _category(b) == "attack-paths" else "finding now reads"
            changes.append(Change(_server(b), _category(b), "neutral", f"{noun}: {_words(b)}", a.message, b.message))
        if (a.suppression is None) == (b.suppression is None):
            continue
        now_waived = b.suppression is not None
        changes.append(Change(_server(b), _category(b), "grew" if now_waived else "shrank",
                              f"finding {'now waived' if now_waived else 'no longer waived'}: {_words(b)}", not now_waived, now_waived))
    return changes
