"""review rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.review import (
    approval_hides_arguments,
    coarse_approval_irreversible,
    sensitive_tool_without_approval,
    tool_effects_undeclared,
)

RULES: tuple[Rule, ...] = (
    sensitive_tool_without_approval.RULE,
    approval_hides_arguments.RULE,
    coarse_approval_irreversible.RULE,
    tool_effects_undeclared.RULE,
)
