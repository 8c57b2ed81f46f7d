"""secrets rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule
from mcpspec.rules.secrets import (
    broad_secret_scope,
    cloud_credentials_passed,
    environment_inherited,
    exposed_secret,
    literal_secret,
    secret_in_argv,
    secret_source_writable,
    secret_without_scope,
    secret_without_ttl,
    shared_secret_file,
)

RULES: tuple[Rule, ...] = (
    literal_secret.RULE,
    secret_in_argv.RULE,
    environment_inherited.RULE,
    shared_secret_file.RULE,
    cloud_credentials_passed.RULE,
    secret_without_ttl.RULE,
    secret_without_scope.RULE,
    secret_source_writable.RULE,
    broad_secret_scope.RULE,
    exposed_secret.RULE,
)
