"""The Python API the CLI is a thin layer over."""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

from mcpspec.diagnostics import Diagnostic, SpecError, SpecPath
from mcpspec.ir.plan import Plan
from mcpspec.perf import gc_paused
from mcpspec.report.model import FileLint
from mcpspec.rules.pipeline import LintOptions
from mcpspec.source.loader import load_file, parse_text
from mcpspec.source.sourcemap import SourceMap

if TYPE_CHECKING:
    from mcpspec.targets.build import Build


def load(path: str | os.PathLike[str], display_name: str | None = None) -> Plan:
    """Parse, validate and resolve one spec file.

    Raises ``mcpspec.source.loader.UsageError`` when the file cannot be read
    and ``SpecError`` (with positioned diagnostics) when it is not a valid spec.
    """
    with gc_paused():
        data, source = load_file(path, display_name)
        return plan_from(data, source)


def load_text(text: str, name: str = "<string>") -> Plan:
    """Like :func:`load`, for YAML text already in memory."""
    with gc_paused():
        data, source = parse_text(text, name)
        return plan_from(data, source)


def plan_from(data: Any, source: SourceMap) -> Plan:
    """Validate parsed data against the models and resolve it into a Plan."""
    from pydantic import ValidationError

    from mcpspec.ir.resolve import resolve
    from mcpspec.spec.errors import diagnostics_from
    from mcpspec.spec.models import Spec

    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        found = diagnostics_from(exc, data, Spec, source)
        raise SpecError(found + _reference_errors_despite(found, data, source)) from None
    return resolve(spec, source)


def _reference_errors_despite(found: list[Diagnostic], data: Any, source: SourceMap) -> list[Diagnostic]:
    """Resolution problems (an undefined secret, agent server or workspace dir) that a
    schema error would otherwise hide until it is fixed.

    Drops the optional keys the schema errors are about and, when what is left is a
    valid spec, resolves it. Nothing required is ever dropped, so no definition
    disappears and no reference is reported missing because of the pruning; problems
    at or around a dropped key are left to the schema error already reported there.
    """
    from pydantic import ValidationError

    from mcpspec.ir.resolve import resolve
    from mcpspec.spec.models import Spec

    dropped = [d.path for d in found]
    pruned = copy.deepcopy(data)
    for path in dropped:
        parent = _lookup(pruned, path[:-1])
        if not path or not isinstance(parent, dict) or not isinstance(path[-1], str):
            return []
        parent.pop(path[-1], None)
    try:
        resolve(Spec.model_validate(pruned), source)
    except ValidationError:
        return []
    except SpecError as exc:
        return [d for d in exc.diagnostics if not any(_related(d.path, path) for path in dropped)]
    return []


def _lookup(data: Any, path: SpecPath) -> Any:
    for segment in path:
        if isinstance(data, dict) and isinstance(segment, str):
            data = data.get(segment)
        elif isinstance(data, list) and isinstance(segment, int) and 0 <= segment < len(data):
            data = data[segment]
        else:
            return None
    return data


def _related(a: SpecPath, b: SpecPath) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def lint_file(path: str | os.PathLike[str], options: LintOptions, display_name: str | None = None) -> FileLint:
    """Lint one file: spec errors become results; otherwise every enabled rule runs.

    Raises ``UsageError`` when the file cannot be read at all.
    """
    from mcpspec.rules.pipeline import lint_plan

    plan, errors = _load_or_errors(path, display_name)
    if plan is None:
        return errors
    with gc_paused():
        return FileLint(errors.file, lint_plan(plan, options), plan.source.text)


def _load_or_errors(path: str | os.PathLike[str], display_name: str | None) -> tuple[Plan | None, FileLint]:
    """The plan, or None and the spec errors as results (the FileLint names the file either way)."""
    from mcpspec.rules.engine import from_diagnostic

    name = display_name if display_name is not None else str(path)
    try:
        return load(path, name), FileLint(name, [])
    except SpecError as exc:
        return None, FileLint(name, [from_diagnostic(d) for d in exc.diagnostics], _text_or_none(path))


def plan_file(path: str | os.PathLike[str], display_name: str | None = None) -> tuple[dict[str, Any] | None, FileLint]:
    """The resolved Plan of one file as data, each value with the spec path that set it
    (:mod:`mcpspec.report.plan_output`), or None and the spec errors as results.

    Raises ``UsageError`` when the file cannot be read at all.
    """
    from mcpspec.report.plan_output import plan_data

    plan, errors = _load_or_errors(path, display_name)
    if plan is None:
        return None, errors
    return plan_data(plan), errors


def _text_or_none(path: str | os.PathLike[str]) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def build_file(
    path: str | os.PathLike[str],
    target: str,
    display_name: str | None = None,
    inline_suppressions: bool = True,
    options: LintOptions | None = None,
    fail_on: str = "high",
) -> tuple[FileLint, Build | None]:
    """Build one file for one target: (every finding as a FileLint, the build or None on spec errors).

    The risk rules run as :func:`lint_file` runs them with ``options``; a finding at or
    above ``fail_on`` blocks the build (``Build.blocked``), and a blocked build is never written.
    Raises ``UsageError`` when the file cannot be read and ValueError for an unknown target.
    """
    from mcpspec.targets.build import build_plan

    plan, errors = _load_or_errors(path, display_name)
    if plan is None:
        return errors, None
    with gc_paused():
        build = build_plan(plan, target, inline_suppressions=inline_suppressions, lint=options, fail_on=fail_on)
    return FileLint(errors.file, build.findings, plan.source.text), build
