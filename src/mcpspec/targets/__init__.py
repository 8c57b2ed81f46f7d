"""Compilers from the Plan to runnable artifacts, one package per target."""

from __future__ import annotations

from mcpspec.targets.base import Target

TARGET_NAMES = ("bwrap", "systemd")


def get_target(name: str) -> Target:
    """The target called ``name``; imported on first use."""
    if name == "bwrap":
        from mcpspec.targets.bwrap import TARGET as bwrap

        return bwrap
    if name == "systemd":
        from mcpspec.targets.systemd import TARGET as systemd

        return systemd
    raise ValueError(f"unknown target {name!r}; choose from {', '.join(TARGET_NAMES)}")
