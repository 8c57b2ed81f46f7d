"""filesystem rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.filesystem import (
    agent_config_writable,
    browser_profile_mounted,
    container_socket_mounted,
    credential_path_mounted,
    overbroad_mount,
    project_dir_writable,
    unbounded_scratch,
    vcs_or_env_writable,
    writable_mount_read_only_tools,
)

RULES: tuple[Rule, ...] = (
    credential_path_mounted.RULE,
    container_socket_mounted.RULE,
    overbroad_mount.RULE,
    writable_mount_read_only_tools.RULE,
    agent_config_writable.RULE,
    vcs_or_env_writable.RULE,
    browser_profile_mounted.RULE,
    unbounded_scratch.RULE,
    project_dir_writable.RULE,
)
