"""Property: no build grants more than its spec, and its manifest never overstates enforcement.

Hypothesis generates valid specs (several servers, stdio and HTTP, mounts that nest
and overlap, secrets shared or not, allowlists, limits, waivers of TG findings);
every target builds each one through the public API, its reader recovers from the
files alone what they grant, and tests/build_properties.py compares that with an
oracle of its own. The number of examples run per target is printed in pytest's
terminal summary.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from build_properties import READERS, build_all, check_build, dump, specs
from hypothesis import HealthCheck, given, settings

EXAMPLES = int(os.environ.get("MCPSPEC_PROPERTY_EXAMPLES", "300"))
COUNTS: Counter[str] = Counter()


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_no_build_grants_more_than_its_spec(spec: dict[str, object]) -> None:
    text = dump(spec)
    builds = build_all(text)
    problems = []
    for target, build in builds.items():
        COUNTS[target] += 1
        problems += check_build(spec, target, build)
    assert not problems, "\n".join(problems) + "\n\nspec:\n" + text


def test_every_target_has_a_reader() -> None:
    from mcpspec.targets import TARGET_NAMES

    assert set(TARGET_NAMES) == set(READERS)


@pytest.fixture(scope="session", autouse=True)
def _report_counts(request: pytest.FixtureRequest) -> None:
    request.config.stash[COUNTS_KEY] = COUNTS


COUNTS_KEY = pytest.StashKey[Counter[str]]()
