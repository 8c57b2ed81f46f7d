"""Helpers the argument-condition rules share: every argument test of every tool's ``when``, with its place."""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules.facts import tool_path, tools
from mcpspec.spec.conditions import AllOf, AnyOf, ArgRule, ArgTest, NotOf

Condition = ArgTest | AllOf | AnyOf | NotOf


def _walk(condition: Condition, path: SpecPath) -> Iterator[tuple[ArgTest, SpecPath]]:
    if isinstance(condition, ArgTest):
        yield condition, path
    elif isinstance(condition, NotOf):
        yield from _walk(condition.not_, (*path, "not"))
    else:
        key, items = ("all", condition.all) if isinstance(condition, AllOf) else ("any", condition.any)
        for index, child in enumerate(items):
            yield from _walk(child, (*path, key, index))


def argument_tests(plan: Plan) -> Iterator[tuple[EffectiveSandbox, str, ArgRule, ArgTest, SpecPath]]:
    """(server, tool name, rule, test, the test's logical path) for every test of every rule."""
    for server, name, tool in tools(plan):
        for index, rule in enumerate(tool.when):
            yield from ((server, name, rule, test, path) for test, path in _walk(rule.if_, (*tool_path(server, name), "when", index, "if")))
