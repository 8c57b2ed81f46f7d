"""What every output format renders: the results of one lint run, per file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mcpspec.rules.engine import LEVELS, Result

FAIL_ORDER = ("error", "critical", "high", "medium", "low", "info")


@dataclass(frozen=True)
class FileLint:
    file: str
    results: list[Result]
    text: str | None = None


@dataclass(frozen=True)
class LintReport:
    files: list[FileLint] = field(default_factory=list)

    @property
    def results(self) -> list[Result]:
        return [result for item in self.files for result in item.results]

    @property
    def active(self) -> list[Result]:
        """Results that count: not suppressed by a comment, a waiver or the baseline."""
        return [result for result in self.results if result.suppression is None]

    def counts(self) -> dict[str, int]:
        counted = Counter(result.severity for result in self.active)
        return {level: counted[level] for level in LEVELS if counted[level]}

    def fails(self, fail_on: str) -> bool:
        """Whether a result at or above ``fail_on`` counts; spec errors always fail."""
        threshold = 1 if fail_on == "never" else FAIL_ORDER.index(fail_on) + 1
        return any(result.severity == "error" or FAIL_ORDER.index(result.severity) < threshold for result in self.active)
