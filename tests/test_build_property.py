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

from hypothesis import HealthCheck, given, settings

from build_properties import READERS, build_all, check_build, dump, specs
from conftest import PROPERTY_EXAMPLES as COUNTS

EXAMPLES = int(os.environ.get("MCPSPEC_PROPERTY_EXAMPLES", "300"))


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

    # The client target grants nothing itself: each entry starts `mcpspec run`, which builds the bwrap
    # launcher that READERS["bwrap"] checks (tests/test_target_client.py checks its files hold no grant).
    # The cedar target's grants are its sandbox's (READERS["cedar"] reads its --sandbox compose build); its policies'
    # verdicts are compared with `mcpspec run`'s on generated specs by tests/test_target_cedar.py.
    assert set(TARGET_NAMES) - {"client"} == set(READERS)


def test_a_vault_secret_is_not_full_in_the_bwrap_manifest() -> None:
    spec = {"version": 1, "project": "acme", "secrets": {"tok-a": {"provider": "vault", "ref": "kv/app#token"}},
            "servers": {"alpha": {"command": ["/usr/bin/srv"], "secrets": [{"use": "tok-a", "as": {"file": "/run/secrets/tok-a"}}]}},
            "waivers": [{"rule": "TG001", "at": "secrets.tok-a.provider", "reason": "accepted", "expires": "2099-01-01"}]}
    assert check_build(spec, "bwrap", build_all(dump(spec))["bwrap"]) == []
