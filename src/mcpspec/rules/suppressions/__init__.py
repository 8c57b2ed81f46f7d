"""Rules about suppressions and waivers themselves."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.suppressions import (
    expired_waiver,
    malformed_suppression,
    unknown_rule_suppression,
    unused_suppression,
    unused_waiver,
)

RULES: tuple[Rule, ...] = (
    malformed_suppression.RULE,
    unknown_rule_suppression.RULE,
    unused_suppression.RULE,
    expired_waiver.RULE,
    unused_waiver.RULE,
)
