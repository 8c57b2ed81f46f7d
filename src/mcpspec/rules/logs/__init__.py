"""logs rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.logs import (
    audit_log_disabled,
    full_output_logged,
    log_sink_writable_by_server,
    raw_prompts_logged,
    redaction_disabled,
)

RULES: tuple[Rule, ...] = (
    audit_log_disabled.RULE,
    raw_prompts_logged.RULE,
    full_output_logged.RULE,
    redaction_disabled.RULE,
    log_sink_writable_by_server.RULE,
)
