"""placement rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.placement import (
    exec_server_in_agent_sandbox,
    third_party_in_agent_sandbox,
    writable_root_filesystem,
)

RULES: tuple[Rule, ...] = (
    exec_server_in_agent_sandbox.RULE,
    third_party_in_agent_sandbox.RULE,
    writable_root_filesystem.RULE,
)
