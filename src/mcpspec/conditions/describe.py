"""A condition in one line of words, for the plan, the review report and the approver."""

from __future__ import annotations

import json

from mcpspec.spec.conditions import AllOf, AnyOf, ArgRule, ArgTest, NotOf

Condition = ArgTest | AllOf | AnyOf | NotOf


def describe(condition: Condition) -> str:
    if isinstance(condition, NotOf):
        return f"not ({describe(condition.not_)})"
    if isinstance(condition, AllOf | AnyOf):
        joiner = " and " if isinstance(condition, AllOf) else " or "
        return "(" + joiner.join(describe(child) for child in (condition.all if isinstance(condition, AllOf) else condition.any)) + ")"
    kind = condition.kind
    if kind == "range":
        assert condition.range is not None
        low, high = condition.range.min, condition.range.max
        text = f"{low} <= {condition.arg} <= {high}" if low is not None and high is not None else (
            f"{condition.arg} >= {low}" if low is not None else f"{condition.arg} <= {high}"
        )
        return text
    what = {"equals": "is", "prefix": "starts with", "glob": "matches glob", "regex": "matches regex"}[kind]
    if condition.is_path and kind == "prefix":
        what = "is a path under"
    elif condition.is_path and kind == "equals":
        what = "is the path"
    case = " (any case)" if condition.case == "insensitive" else ""
    return f"{condition.arg} {what} {json.dumps(getattr(condition, kind), ensure_ascii=True)}{case}"


def rule_text(rule: ArgRule) -> str:
    return f"if {describe(rule.if_)} then {rule.then}"


def rules_text(rules: list[ArgRule], otherwise: str | None) -> list[str]:
    """Each rule as ``when[i] (name): if ... then ...``, and the ``otherwise``."""
    lines = [f"when[{index}]" + (f" ({rule.name})" if rule.name else "") + f": {rule_text(rule)}" for index, rule in enumerate(rules)]
    if otherwise is not None:
        lines.append(f"otherwise: {otherwise}")
    return lines
