from __future__ import annotations

import pytest

from mcpspec.api import load_text
from mcpspec.diagnostics import SpecError

GOOD = "version: 1\nproject: p\nservers:\n  a:\n    command: [x]\n"


def first_error(text: str) -> str:
    with pytest.raises(SpecError) as caught:
        load_text(text, "s.yaml")
    return caught.value.diagnostics[0].format()


def test_a_good_minimal_spec_loads() -> None:
    assert list(load_text(GOOD).servers) == ["a"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD + "    lifecycle: {idle_timout: 5m}\n", "s.yaml:6:17: SC001 unknown key 'idle_timout' in servers.a.lifecycle; did you mean 'idle_timeout'?"),
        (GOOD + "    transport: {type: http, prot: 80}\n", "s.yaml:6:29: SC001 unknown key 'prot' in servers.a.transport; did you mean 'port'?"),
        (GOOD + "    zzz: 1\n", "s.yaml:6:5: SC001 unknown key 'zzz' in servers.a; allowed keys:"),
        ("version: 1\nservers:\n  a:\n    command: [x]\n", "s.yaml:1:1: SC002 missing required key 'project'"),
        (GOOD + "    mounts:\n      - {from: /srv}\n", "s.yaml:7:9: SC002 missing required key 'to' in servers.a.mounts[0]"),
        (GOOD + "    mounts: {from: /srv}\n", "s.yaml:6:13: SC003 servers.a.mounts: expected a list, got a mapping"),
        (GOOD + "    lifecycle: {idle_timeout: 15}\n", "s.yaml:6:31: SC004 servers.a.lifecycle.idle_timeout: a duration needs a unit: write '15s'"),
        (GOOD + "    runtime: {memory: 1GB}\n", "s.yaml:6:23: SC004 servers.a.runtime.memory: '1GB' is not a size"),
        (GOOD + "    egress: {allow: [example.com]}\n", "s.yaml:6:22: SC004 servers.a.egress.allow[0]: 'example.com' needs a port"),
        (GOOD + "  Bad_Name:\n    command: [x]\n", "s.yaml:6:3: SC004 key 'Bad_Name': name 'Bad_Name' is not allowed"),
        (GOOD + "    mounts: [{from: /srv/../etc, to: /x}]\n", "s.yaml:6:21: SC004 servers.a.mounts[0].from: path '/srv/../etc' must not contain '..'"),
        (GOOD.replace("version: 1", "version: 2"), "s.yaml:1:10: SC004 version: Input should be 1"),
        ("- a\n- b\n", "s.yaml:1:1: SC003 the file must be a mapping of keys such as 'version' and 'servers': expected a mapping, got a list") ,
    ],
)
def test_schema_errors_point_at_the_key_or_value(text: str, expected: str) -> None:
    assert first_error(text).startswith(expected)
