"""Red-team regressions for the codex-profile and cedar targets: each attack that got through once.

Cedar: evaluated with cedarpy as each gateway asks; `mcpspec run`'s gate is the verdict no policy may exceed.
"""

from __future__ import annotations

from typing import Any

import pytest

from cedar_eval import RANK, docker, oracle, toolhive
from mcpspec.api import load_text
from mcpspec.targets import get_target, skeleton
from mcpspec.targets.cedar.docker import POLICY_FILE


def _two_rules(refused: str, allowed: str) -> str:
    return f"""\
version: 1
project: acme
servers:
  git:
    command: [/usr/bin/git-mcp]
    tools:
      push:
        when:
          - {{if: {{arg: cmd, equals: {refused!r}}}, then: refuse}}
          - {{if: {{arg: cmd, equals: {allowed!r}}}, then: allow}}
        otherwise: refuse
"""


def _verdicts(spec: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
    plan = load_text(spec, "mcp-sandbox.yaml")
    files = skeleton.build(get_target("cedar"), plan).files
    return (oracle(plan, plan.servers["git"], "push", arguments), docker(files[POLICY_FILE], "git", "push", arguments),
            toolhive(files["toolhive/git.authz.json"], "git", "push", arguments))


@pytest.mark.parametrize(("refused", "allowed"), [
    ("rm", "/bin/rm"),  # `mcpspec run` reads /bin/rm as rm
    ("main", " main"),  # stripped
    ("main", "'main'"),  # a shell's quote removal
    ("main", "m\u0430in"),  # a Cyrillic look-alike
    ("a b", "a  b"),  # blanks collapse
])
def test_a_later_allowed_string_that_may_read_as_a_refused_one_is_not_allowed(refused: str, allowed: str) -> None:
    """A string another rule names is not `surely not` the refused one when `mcpspec run` may read it as that."""
    run, by_docker, by_toolhive = _verdicts(_two_rules(refused, allowed), {"cmd": allowed})
    assert run == "refuse"
    assert RANK[by_docker] <= RANK[run] and RANK[by_toolhive] <= RANK[run], (by_docker, by_toolhive)


def test_an_allowed_string_with_nul_is_never_allowed() -> None:
    """`mcpspec run` never judges a string with NUL (a C server ends it there): no allow rule holds on it."""
    spec = _two_rules("ab", "never").replace("'ab'", '"a\\0b"').replace("then: refuse}", "then: allow}", 1)
    run, by_docker, by_toolhive = _verdicts(spec, {"cmd": "a\x00b"})
    assert run == "refuse"
    assert (by_docker, by_toolhive) == ("refuse", "refuse")
