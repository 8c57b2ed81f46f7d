"""The Python API the CLI is a thin layer over."""

from __future__ import annotations

import os
from typing import Any

from mcpspec.diagnostics import SpecError
from mcpspec.ir.plan import Plan
from mcpspec.perf import gc_paused
from mcpspec.source.loader import load_file, parse_text
from mcpspec.source.sourcemap import SourceMap


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
        raise SpecError(diagnostics_from(exc, data, Spec, source)) from None
    return resolve(spec, source)
