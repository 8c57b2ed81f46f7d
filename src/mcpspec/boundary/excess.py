"""One excess of a spec over a boundary (shared by the comparisons of :mod:`mcpspec.boundary`)."""

from __future__ import annotations

from dataclasses import dataclass

from mcpspec.diagnostics import SpecPath


@dataclass(frozen=True, slots=True)
class Excess:
    """One thing the spec allows and the boundary does not, with the spec path that allows it."""

    code: str
    server: str
    path: SpecPath
    message: str
