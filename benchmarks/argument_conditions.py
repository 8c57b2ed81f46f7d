"""What a tool's argument rules cost per call: p50 and p99 of judging one call, in microseconds.

    python benchmarks/argument_conditions.py [--calls 20000]

Three calls against the same two rules (a path glob that allows, and a refusal on a glob or a
regex): an ordinary path, a 4 KiB hostile path full of percent-escapes, and a path of 2,000
fullwidth solidi (the worst readings the matcher accepts to build). The regex is judged by the
linear-time automaton, so no argument costs more than its length.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from mcpspec.conditions.evaluate import rule
from mcpspec.spec.conditions import ArgRule

RULES = [
    ArgRule.model_validate({"name": "output area", "if": {"arg": "path", "glob": "/workspace/output/**"}, "then": "allow"}),
    ArgRule.model_validate({"if": {"any": [{"arg": "path", "glob": "/etc/**"}, {"arg": "name", "regex": "(a|a)*[a-z0-9-]{1,40}"}]}, "then": "refuse"}),
]
CALLS: dict[str, dict[str, Any]] = {
    "ordinary": {"path": "/workspace/output/reports/2026/summary.md", "name": "summary"},
    "percent-escaped 4 KiB": {"path": "/workspace/output/" + "%2e%2e%2f" * 450, "name": "a" * 4000},
    "2,000 fullwidth solidi": {"path": "\uff0f" * 2000, "name": "x"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    calls = parser.parse_args().calls
    for label, arguments in CALLS.items():
        count = calls if label == "ordinary" else max(calls // 50, 20)
        times = []
        for _ in range(count):
            started = time.perf_counter()
            rule(RULES, "approve", arguments)
            times.append(time.perf_counter() - started)
        times.sort()
        p50, p99 = statistics.median(times), times[int(len(times) * 0.99) - 1]
        print(f"{label:>24}: p50 {p50 * 1e6:8.1f} us   p99 {p99 * 1e6:8.1f} us   ({count} calls; {rule(RULES, 'approve', arguments)})")


if __name__ == "__main__":
    main()
