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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD + "    placement: dedicatd\n", "s.yaml:6:16: SC004 servers.a.placement: Input should be 'agent', 'dedicated' or 'external'; did you mean 'dedicated'?"),
        (GOOD + "    env: {inherit: minmal}\n", "s.yaml:6:20: SC004 servers.a.env.inherit: Input should be 'none', 'minimal' or 'all'; did you mean 'minimal'?"),
        (GOOD + "    tools: {t: {effects: [exec, deplyo]}}\n", "s.yaml:6:33: SC004 servers.a.tools.t.effects[1]: Input should be 'reads_private', "),
        (GOOD + "    transport: {type: htp}\n", "s.yaml:6:23: SC004 servers.a.transport.type: Input tag 'htp' found using 'type' does not match"),
        ("version: 1\nproject: p\nsecrets:\n  s: {provider: vualt, ref: kv/x}\nservers:\n  a:\n    command: [x]\n", "s.yaml:4:17: SC004 secrets.s.provider: Input should be"),
    ],
)
def test_a_misspelt_choice_gets_a_did_you_mean(text: str, expected: str) -> None:
    error = first_error(text)
    assert error.startswith(expected)
    suggestion = {"dedicatd": "dedicated", "minmal": "minimal", "deplyo": "deploy", "htp": "http", "vualt": "vault"}
    typo = next(word for word in suggestion if word in text)
    assert error.endswith(f"; did you mean {suggestion[typo]!r}?"), error


def test_a_choice_far_from_every_value_gets_no_guess() -> None:
    error = first_error(GOOD + "    placement: zzzzzz\n")
    assert error.endswith("Input should be 'agent', 'dedicated' or 'external'"), error
