"""Rules the build reports: what a target cannot enforce of what the spec asks."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.targets import boundary_not_enforced, boundary_partly_enforced, policy_not_enforced, value_not_representable

RULES: tuple[Rule, ...] = (
    boundary_not_enforced.RULE,
    boundary_partly_enforced.RULE,
    policy_not_enforced.RULE,
    value_not_representable.RULE,
)
