"""subprocess rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.subprocess import (
    background_jobs_unbounded,
    container_escape_flags,
    downloads_at_start,
    exec_without_process_policy,
    listeners_allowed,
    package_install_unrestricted,
    privilege_escalation,
    shell_string_command,
    unpinned_image,
    unpinned_package,
)

RULES: tuple[Rule, ...] = (
    unpinned_image.RULE,
    unpinned_package.RULE,
    shell_string_command.RULE,
    privilege_escalation.RULE,
    exec_without_process_policy.RULE,
    package_install_unrestricted.RULE,
    listeners_allowed.RULE,
    background_jobs_unbounded.RULE,
    downloads_at_start.RULE,
    container_escape_flags.RULE,
)
