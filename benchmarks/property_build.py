"""Run the build properties of tests/test_build_property.py with many more examples.

    python benchmarks/property_build.py --examples 5000

Prints how many examples each target built and checked, the time, and the first
failing spec (hypothesis shrinks it) if a property breaks.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from hypothesis import HealthCheck, given, seed, settings

    from build_properties import build_all, check_build, dump, specs

    counts: Counter[str] = Counter()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(specs())
    def run(spec: dict[str, object]) -> None:
        text = dump(spec)
        problems = []
        for target, build in build_all(text).items():
            counts[target] += 1
            problems += check_build(spec, target, build)
        assert not problems, "\n".join(problems) + "\n\nspec:\n" + text

    started = time.perf_counter()
    failed = None
    try:
        run()
    except AssertionError as exc:
        failed = exc
    elapsed = time.perf_counter() - started
    for target, count in sorted(counts.items()):
        print(f"{target}: {count} examples built and checked")
    print(f"time: {elapsed:.1f} s")
    if failed is not None:
        print(f"a property failed:\n{failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
