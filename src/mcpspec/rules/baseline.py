"""The baseline: findings accepted as they are, keyed by file, rule and logical path
(never by line), so editing the file does not invalidate it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from mcpspec.diagnostics import format_path
from mcpspec.report.model import FileLint, LintReport
from mcpspec.rules.engine import Result, Suppression

BASELINE_VERSION = 1
DEFAULT_BASELINE = ".mcpspec-baseline.json"
Key = tuple[str, str, str]


class BaselineError(Exception):
    """A baseline file that cannot be read: exit status 2."""


def _key(result: Result) -> Key:
    return (result.file, result.code, format_path(result.path) or f"line {result.span.line}")


def load(path: Path) -> set[Key]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["findings"]
        if data.get("version") != BASELINE_VERSION:
            raise BaselineError(f"{path}: unsupported baseline version {data.get('version')!r}")
        return {(str(e["file"]), str(e["rule"]), str(e["path"])) for e in entries}
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline file (create it with --write-baseline)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BaselineError(f"{path}: not a valid mcpspec baseline: {exc}") from None
    except RecursionError:
        raise BaselineError(f"{path}: not a valid mcpspec baseline: nested too deeply") from None


def apply(report: LintReport, keys: set[Key]) -> LintReport:
    """Mark the results the baseline lists as suppressed; spec errors are never baselined."""
    files = []
    for item in report.files:
        results = [
            r.suppressed(Suppression("baseline", "accepted in the baseline"))
            if r.suppression is None and r.severity != "error" and _key(r) in keys
            else r
            for r in item.results
        ]
        files.append(replace(item, results=results) if results != item.results else item)
    return LintReport(files)


def kept(report: LintReport, previous: set[Key]) -> set[Key]:
    """The entries of ``previous`` for files ``report`` did not check: an update keeps them."""
    checked = {item.file for item in report.files}
    return {key for key in previous if key[0] not in checked}


def render(report: LintReport, previous: set[Key] | None = None) -> str:
    """The baseline of every finding that counts now (spec errors excluded), keeping the entries
    of ``previous`` (the baseline being updated) for files this run did not check."""
    keys = sorted(kept(report, previous or set()) | {_key(r) for r in report.active if r.severity != "error"})
    data = {"version": BASELINE_VERSION, "findings": [{"file": f, "rule": rule, "path": p} for f, rule, p in keys]}
    return json.dumps(data, indent=2) + "\n"


__all__ = ["DEFAULT_BASELINE", "BaselineError", "FileLint", "apply", "kept", "load", "render"]
