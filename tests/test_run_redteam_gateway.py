"""`mcpspec run`'s gateway features (argument rules, audit chain, remote side) attacked: each test is
one attack that once got through (real relay, real sandbox where a server runs)."""

from __future__ import annotations

from typing import Any

from test_run_redteam import call, calls_seen
from test_run_relay_real import box, raw_session, write_spec

__all__ = ["box"]

RANGE_TOOLS = """\
      echo:
        effects: []
        when:
          - {if: {arg: count, range: {max: 10}}, then: allow}
          - {if: {arg: count, range: {min: 11}}, then: refuse}
        otherwise: refuse"""


def test_an_integer_too_large_for_a_float_is_refused_by_a_range_rule_not_a_crash(box: Any) -> None:
    """A range rule compared a JSON integer past float range through math.isfinite: OverflowError ended the session."""
    spec = write_spec(box, "hugeint", RANGE_TOOLS, script="raw_server.py")
    huge = 10**400
    replies, _status, stderr = raw_session(spec, "r1", [call(1, "echo", count=huge), call(2, "echo", count=3)], wait=20)
    first = replies[1]["result"]
    assert first["isError"] is True and "argument rule" in first["content"][0]["text"], stderr
    assert replies[2]["result"].get("isError") is not True, stderr
    assert [args["count"] for name, args in calls_seen(box, "hugeint") if name == "echo"] == [3]
