"""lifecycle rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.lifecycle import (
    no_idle_timeout,
    no_max_lifetime,
    pause_without_limit,
    shared_workspace_across_agents,
    unlimited_resources,
    workspace_not_reset,
)

RULES: tuple[Rule, ...] = (
    no_idle_timeout.RULE,
    no_max_lifetime.RULE,
    workspace_not_reset.RULE,
    shared_workspace_across_agents.RULE,
    unlimited_resources.RULE,
    pause_without_limit.RULE,
)
