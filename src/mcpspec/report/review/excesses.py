"""The report's boundary section: each excess of the spec over a boundary, as a finding is shown
(its place, the spec excerpt, the counterexample in its message)."""

from __future__ import annotations

import dataclasses

from mcpspec.boundary.check import KINDS, check
from mcpspec.boundary.render import results
from mcpspec.ir.plan import Plan
from mcpspec.redact import redact
from mcpspec.report.review.data import Review, finding_view


def add_excesses(report: Review, plan: Plan, boundary_name: str, boundary: Plan, text: str | None) -> None:
    """Fill ``report.boundary`` and ``report.excesses`` from ``check(plan, boundary)``."""
    found = check(plan, boundary)
    lines = text.splitlines() if text is not None else []
    report.boundary = redact(boundary_name)
    report.excesses = [
        dataclasses.replace(
            finding_view(result, index, lines, (excess.server,)),
            anchor=f"excess-{index}",
            summary=f"Boundary excess: {KINDS[result.code][1]} (docs/boundary.md)",
            doc_file="",
        )
        for index, (result, excess) in enumerate(zip(results(plan, found), found, strict=True))
    ]
