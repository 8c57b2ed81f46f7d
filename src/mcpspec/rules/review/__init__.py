"""review rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.review import (
    approval_hides_arguments,
    argument_condition_unknown_argument,
    argument_condition_vacuous,
    coarse_approval_irreversible,
    path_compared_as_string,
    refuse_rule_blocklist,
    sensitive_tool_without_approval,
    tool_effects_undeclared,
)

RULES: tuple[Rule, ...] = (
    sensitive_tool_without_approval.RULE,
    approval_hides_arguments.RULE,
    coarse_approval_irreversible.RULE,
    tool_effects_undeclared.RULE,
    argument_condition_vacuous.RULE,
    argument_condition_unknown_argument.RULE,
    path_compared_as_string.RULE,
    refuse_rule_blocklist.RULE,
)
