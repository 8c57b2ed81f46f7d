"""Load both sides of a diff, lint them, and compare: the one function ``mcpspec diff`` calls."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple

from mcpspec.diagnostics import SpecError
from mcpspec.diff.boundary import compare_excesses
from mcpspec.diff.compare import compare_plans
from mcpspec.diff.enforcement import compare_enforcement
from mcpspec.diff.findings import compare_findings
from mcpspec.diff.model import Diff, ordered
from mcpspec.diff.source import Source, parse_source, read_revision
from mcpspec.ir.plan import Plan
from mcpspec.perf import gc_paused
from mcpspec.report.model import FileLint
from mcpspec.rules.pipeline import lint_plan
from mcpspec.settings import Settings
from mcpspec.source.loader import MAX_FILE_BYTES, UsageError, load_bytes


class Side(NamedTuple):
    """One version: its Plan, or None and its spec errors as lint results."""

    plan: Plan | None
    lint: FileLint


def load_side(text: str, cwd: Path | None = None) -> Side:
    """Read one side (a file or ``git:REV:PATH``); raises UsageError when it cannot be read at all.

    The lock beside a spec is not read: a diff compares specs (locks differ by machine).
    """
    from mcpspec.api import plan_from
    from mcpspec.rules.engine import from_diagnostic

    source = parse_source(text)
    raw = _read(source, cwd)
    try:
        with gc_paused():
            data, sourcemap = load_bytes(raw, source.name)
            return Side(plan_from(data, sourcemap), FileLint(source.name, []))
    except SpecError as exc:
        return Side(None, FileLint(source.name, [from_diagnostic(d) for d in exc.diagnostics], _text(raw)))


def _read(source: Source, cwd: Path | None) -> bytes:
    """The bytes of one side; UsageError (naming it as the user wrote it) when it cannot be read."""
    if source.path is None:
        return read_revision(source, cwd)
    path = source.path if cwd is None or source.path.is_absolute() else cwd / source.path
    try:
        if path.is_dir():
            raise UsageError(f"{source.name}: is a directory, not a spec file")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise UsageError(f"{source.name}: file is {size} bytes; the limit is {MAX_FILE_BYTES} (16 MiB)")
        return path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{source.name}: no such file") from None
    except PermissionError:
        raise UsageError(f"{source.name}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{source.name}: cannot read: {exc.strerror or exc}") from None


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def canonical(plan: Plan) -> Plan:
    """The plan with servers and agents (and each agent's servers) in name order: the rules name
    servers in the plan's order, and the order of keys in the file is no change."""
    servers = {name: plan.servers[name] for name in sorted(plan.servers)}
    agents = {name: tuple(sorted(plan.agents[name])) for name in sorted(plan.agents)}
    return dataclasses.replace(plan, servers=servers, agents=agents, derived={})


def diff_plans(
    old: Plan, new: Plan, settings: Settings, target: str | None = None, names: tuple[str, str] = ("old", "new"), within: tuple[str, Plan] | None = None
) -> Diff:
    """The changes from ``old`` to ``new``; findings as lint reports them with ``settings``; with
    ``within`` (a boundary's name and plan), the excesses over it that the change adds or removes."""
    with gc_paused():
        changes = compare_plans(old, new)
        found_old = lint_plan(canonical(old), settings.lint_options(old.file))
        found_new = lint_plan(canonical(new), settings.lint_options(new.file))
        changes += compare_findings(found_old, found_new)
        if target is not None:
            changes += compare_enforcement(old, new, target)
        if within is not None:
            changes += compare_excesses(old, new, within[1])
    return Diff(names[0], names[1], ordered(changes), target, within[0] if within is not None else None)
