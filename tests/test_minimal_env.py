"""The docs and the code agree on what `env.inherit: minimal` passes."""

from __future__ import annotations

import re

from conftest import REPO
from mcpspec.spec.models import IMAGE_ENV, MINIMAL_ENV


def _documented() -> tuple[list[str], list[str]]:
    """The names docs/spec.md lists for `minimal`, and those it says container images keep."""
    spec = (REPO / "docs" / "spec.md").read_text(encoding="utf-8")
    (row,) = [line for line in spec.splitlines() if line.startswith("| `inherit` |")]
    match = re.search(r"minimal \(([A-Z_, ]+); container targets keep the image's ([A-Z_]+(?: and [A-Z_]+)*)\)", row)
    assert match, f"docs/spec.md does not say what minimal passes: {row}"
    return [name.strip() for name in match.group(1).split(",")], match.group(2).split(" and ")


def test_docs_list_exactly_the_variables_minimal_passes() -> None:
    names, image = _documented()
    assert names == list(MINIMAL_ENV)
    assert image == list(IMAGE_ENV) and set(IMAGE_ENV) <= set(MINIMAL_ENV)


def test_every_target_and_verify_use_the_documented_list() -> None:
    from mcpspec.targets.bwrap import MINIMAL_ENV as BWRAP
    from mcpspec.targets.compose.service import MINIMAL_INHERIT as COMPOSE

    names, image = _documented()
    assert list(BWRAP) == names
    assert list(COMPOSE) == [name for name in names if name not in image]


def test_verify_expects_the_documented_list_from_the_host() -> None:
    from mcpspec.api import load_text
    from mcpspec.verify.checks import expected_environment

    plan = load_text("version: 1\nproject: p\nservers:\n  a:\n    command: [/usr/bin/tool]\n    env: {inherit: minimal}\n")
    names, _image = _documented()
    host = dict.fromkeys([*names, "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "LC_ALL"], "x")
    assert expected_environment(plan.servers["a"], host) == set(names)
