"""The explicit registry of every rule; each category package lists its own."""

from __future__ import annotations

import functools

from mcpspec.rules.base import Rule


@functools.cache
def all_rules() -> tuple[Rule, ...]:
    """Every rule, in ID order. Imported on first use so ``--version`` stays instant."""
    from mcpspec.rules import (
        filesystem,
        graph,
        lifecycle,
        logs,
        network,
        placement,
        poisoning,
        review,
        secrets,
        subprocess,
        suppressions,
        targets,
        testing,
        tool_scope,
    )

    packages = (tool_scope, placement, filesystem, secrets, network, subprocess, lifecycle, logs, review, testing, graph, suppressions, targets, poisoning)
    rules = sorted((rule for package in packages for rule in package.RULES), key=lambda rule: rule.id)
    return tuple(rules)


@functools.cache
def _index() -> dict[str, Rule]:
    index: dict[str, Rule] = {}
    for rule in all_rules():
        for name in (rule.id, rule.slug):
            if name in index:
                raise RuntimeError(f"rule name {name!r} is used twice")
            index[name] = rule
    return index


def find(name: str) -> Rule | None:
    """A rule by ID (``FS001``, any case) or slug (``credential-path-mounted``)."""
    index = _index()
    return index.get(name) or index.get(name.upper())


def expand(names: list[str]) -> set[str]:
    """Rule IDs named by IDs, slugs, or ID prefixes (``FS`` selects every filesystem rule).

    Raises ValueError naming the first thing that matches no rule.
    """
    ids: set[str] = set()
    for name in names:
        rule = find(name)
        if rule is not None:
            ids.add(rule.id)
            continue
        prefixed = {rule.id for rule in all_rules() if rule.id.startswith(name.upper())}
        if not prefixed or not name.isalnum():
            raise ValueError(f"no rule is named {name!r} (see `mcpspec rules`)")
        ids |= prefixed
    return ids
