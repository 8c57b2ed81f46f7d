"""What `mcpspec build` (and the committed `targets/*/build.txt`) says before writing:
the findings that count, then why nothing was built or which servers run elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpspec.report import text
from mcpspec.report.model import LintReport

if TYPE_CHECKING:
    from mcpspec.api import BuildOutcome


def nothing_built(target: str) -> str:
    return f"mcpspec: nothing built for {target}: the findings above stop the build"


def render(outcome: BuildOutcome, colour: bool = False) -> str:
    report = LintReport([outcome.lint])
    out = text.render(report, colour=colour) if report.active else ""
    if outcome.stopped:
        return out + nothing_built(outcome.target) + "\n"
    assert outcome.build is not None
    if outcome.build.elsewhere:
        out += f"not built (placement: external, they run elsewhere): {', '.join(outcome.build.elsewhere)}\n"
    return out
