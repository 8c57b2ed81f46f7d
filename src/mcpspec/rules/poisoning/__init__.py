"""Tool-poisoning rules: `mcpspec lock` and `mcpspec run` judge what servers offer with them
(mcpspec.poisoning); lint cannot, so they have no check over the plan."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.poisoning import (
    annotation_contradicts_effects,
    confusable_name,
    credential_path_reference,
    cross_server_reference,
    exfiltration_url,
    invisible_characters,
    model_instructions,
    oversized_definition,
    tool_shadowing,
    url_outside_egress,
)

RULES: tuple[Rule, ...] = (
    invisible_characters.RULE,
    confusable_name.RULE,
    model_instructions.RULE,
    credential_path_reference.RULE,
    cross_server_reference.RULE,
    exfiltration_url.RULE,
    url_outside_egress.RULE,
    oversized_definition.RULE,
    tool_shadowing.RULE,
    annotation_contradicts_effects.RULE,
)
