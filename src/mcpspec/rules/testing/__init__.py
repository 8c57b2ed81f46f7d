"""testing rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.testing import outdated_protocol_revision, unverifiable_egress_entry

RULES: tuple[Rule, ...] = (
    unverifiable_egress_entry.RULE,
    outdated_protocol_revision.RULE,
)
