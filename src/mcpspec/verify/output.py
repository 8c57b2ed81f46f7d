"""The verify report: a text table or JSON, one row per control."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mcpspec.verify.checks import Row

COLUMNS = ("server", "control", "expected", "observed", "status")


def failed(rows: Sequence[Row]) -> bool:
    return any(row.status == "fail" for row in rows)


def render_json(rows: Sequence[Row]) -> str:
    counts = {status: sum(row.status == status for row in rows) for status in ("pass", "fail", "skipped")}
    return json.dumps({"passed": not failed(rows), "counts": counts, "rows": [row.as_json() for row in rows]}, indent=2) + "\n"


def render_text(rows: Sequence[Row]) -> str:
    table = [COLUMNS, *((row.server, row.control, row.expected, row.observed, row.status) for row in rows)]
    widths = [min(60, max(len(line[index]) for line in table)) for index in range(len(COLUMNS) - 1)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)) + "  " + line[-1] for line in table]
    fails = sum(row.status == "fail" for row in rows)
    skipped = sum(row.status == "skipped" for row in rows)
    summary = f"{len(rows)} controls: {len(rows) - fails - skipped} passed, {fails} failed" + (f", {skipped} skipped" if skipped else "")
    return "\n".join(lines) + "\n" + summary + "\n"


def render(rows: Sequence[Row], output_format: str) -> str:
    return render_json(rows) if output_format == "json" else render_text(rows)
