"""Graph rules: risks that come from what servers share."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.graph import (
    capability_laundering,
    destructive_flow,
    lethal_trifecta,
    multi_hop_exfiltration,
    secrets_beside_open_egress,
    shared_secret,
    shared_state_across_trust,
)

RULES: tuple[Rule, ...] = (
    lethal_trifecta.RULE,
    destructive_flow.RULE,
    shared_secret.RULE,
    capability_laundering.RULE,
    multi_hop_exfiltration.RULE,
    shared_state_across_trust.RULE,
    secrets_beside_open_egress.RULE,
)
