"""Helpers the argument-condition rules share: every argument test of every tool's ``when``, with its place."""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.facts import tool_path, tools
from mcpspec.spec.conditions import AllOf, AnyOf, ArgRule, ArgTest, NotOf

Condition = ArgTest | AllOf | AnyOf | NotOf


def walk(condition: Condition, path: SpecPath, negated: bool = False) -> Iterator[tuple[ArgTest, SpecPath, bool]]:
    """Each test of ``condition`` with its path and whether it sits under an odd number of `not`s."""
    if isinstance(condition, ArgTest):
        yield condition, path, negated
    elif isinstance(condition, NotOf):
        yield from walk(condition.not_, (*path, "not"), not negated)
    else:
        key, items = ("all", condition.all) if isinstance(condition, AllOf) else ("any", condition.any)
        for index, child in enumerate(items):
            yield from walk(child, (*path, key, index), negated)


def argument_tests(plan: Plan) -> Iterator[tuple[EffectiveSandbox, str, ArgRule, ArgTest, SpecPath]]:
    """(server, tool name, rule, test, the test's logical path) for every test of every rule."""
    for server, name, tool in tools(plan):
        for index, rule in enumerate(tool.when):
            yield from ((server, name, rule, test, path) for test, path, _ in walk(rule.if_, (*tool_path(server, name), "when", index, "if")))
