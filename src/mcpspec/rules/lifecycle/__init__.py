"""lifecycle rules."""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULES: tuple[Rule, ...] = ()
