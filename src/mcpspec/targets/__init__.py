"""Compilers from the Plan to runnable artifacts, one package per target.

``REGISTRY`` is the one table of targets: the CLI, the build, the benchmark and
the ``targets/`` generator all read it. Adding a target is its package (a
module-level ``TARGET`` that follows ``targets.base.Target``), its line here,
and its tests.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the table stays cheap to import: `--help` lists it without loading the Plan
    from mcpspec.targets.base import Target

# name -> the package that holds its TARGET (imported on first use: `lint` never pays for a target)
REGISTRY: dict[str, str] = {
    "bwrap": "mcpspec.targets.bwrap",
    "systemd": "mcpspec.targets.systemd",
    "compose": "mcpspec.targets.compose",
    "k8s": "mcpspec.targets.k8s",
    "client": "mcpspec.targets.client",
    "srt": "mcpspec.targets.srt",
    "codex-profile": "mcpspec.targets.codex_profile",
    "cedar": "mcpspec.targets.cedar",
}
TARGET_NAMES = tuple(REGISTRY)


def get_target(name: str) -> Target:
    """The target called ``name``; raises ValueError for an unknown one."""
    module = REGISTRY.get(name)
    if module is None:
        raise ValueError(f"unknown target {name!r}; choose from {', '.join(TARGET_NAMES)}")
    target: Target = importlib.import_module(module).TARGET
    return target
