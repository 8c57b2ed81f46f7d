"""network rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.network import (
    domain_allowlist_without_proxy,
    exfiltration_friendly_allowlist,
    metadata_endpoint_reachable,
    open_egress_with_secrets,
    private_range_from_untrusted_reader,
    wildcard_apex_mismatch,
)

RULES: tuple[Rule, ...] = (
    metadata_endpoint_reachable.RULE,
    open_egress_with_secrets.RULE,
    private_range_from_untrusted_reader.RULE,
    exfiltration_friendly_allowlist.RULE,
    wildcard_apex_mismatch.RULE,
    domain_allowlist_without_proxy.RULE,
)
