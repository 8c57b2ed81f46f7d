"""The verify report: a text table or JSON, one row per control."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mcpspec.verify.checks import Row

COLUMNS = ("server", "control", "expected", "observed", "status")


def failed(rows: Sequence[Row], allow_skipped: bool = False) -> bool:
    """Whether the run fails: a failed control, or (unless ``allow_skipped``) one that was not checked."""
    return any(row.status == "fail" or (row.status == "skipped" and not allow_skipped) for row in rows)


def render_json(rows: Sequence[Row], allow_skipped: bool = False) -> str:
    counts = {status: sum(row.status == status for row in rows) for status in ("pass", "fail", "skipped")}
    report = {"passed": not failed(rows, allow_skipped), "skipped_allowed": allow_skipped, "counts": counts, "rows": [row.as_json() for row in rows]}
    return json.dumps(report, indent=2) + "\n"


def render_text(rows: Sequence[Row], allow_skipped: bool = False) -> str:
    table = [COLUMNS, *((row.server, row.control, row.expected, row.observed, row.status) for row in rows)]
    widths = [min(60, max(len(line[index]) for line in table)) for index in range(len(COLUMNS) - 1)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)) + "  " + line[-1] for line in table]
    fails = sum(row.status == "fail" for row in rows)
    skipped = sum(row.status == "skipped" for row in rows)
    summary = f"{len(rows)} controls: {len(rows) - fails - skipped} passed, {fails} failed"
    if skipped:
        summary += f", {skipped} skipped" + ("" if allow_skipped else " (a control not checked fails the run; --allow-skipped accepts it)")
    return "\n".join(lines) + "\n" + summary + "\n"


def render(rows: Sequence[Row], output_format: str, allow_skipped: bool = False) -> str:
    return render_json(rows, allow_skipped) if output_format == "json" else render_text(rows, allow_skipped)
