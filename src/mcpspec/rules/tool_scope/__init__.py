"""tool_scope rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.tool_scope import (
    deprecated_sse_transport,
    http_bound_to_all_interfaces,
    http_without_auth,
    http_without_origin_check,
    oauth_audience_missing,
    plaintext_http_remote,
    protocol_revision_unspoken,
    tools_list_partial,
    tools_not_pinned,
    tools_undeclared,
)

RULES: tuple[Rule, ...] = (
    http_bound_to_all_interfaces.RULE,
    http_without_auth.RULE,
    http_without_origin_check.RULE,
    plaintext_http_remote.RULE,
    oauth_audience_missing.RULE,
    deprecated_sse_transport.RULE,
    tools_undeclared.RULE,
    tools_not_pinned.RULE,
    tools_list_partial.RULE,
    protocol_revision_unspoken.RULE,
)
