"""The argument-condition matcher (``when:``): each test, fail-closed answers for what cannot be
judged, path readings (dot segments, percent-escapes, backslashes, NFKC, fullwidth solidus, case),
the linear-time regex, the spec's refusals, and the rule order a call meets."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from pydantic import ValidationError

from mcpspec.conditions.describe import rules_text
from mcpspec.conditions.evaluate import Truth, rule, truth
from mcpspec.conditions.saferegex import MAX_VALUE_CHARS, RegexRefused, SafeRegex
from mcpspec.spec.conditions import ArgRule, ArgTest
from mcpspec.spec.models import Tool

OUTPUT = {"arg": "path", "glob": "/workspace/output/**"}


def cond(data: dict[str, Any]) -> Any:
    return ArgRule.model_validate({"if": data, "then": "allow"}).if_


def holds(data: dict[str, Any], arguments: dict[str, Any]) -> Truth:
    return truth(cond(data), arguments)


YES, NO, UNKNOWN = Truth(True, True), Truth(False, False), Truth(False, True)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/workspace/output/a.txt", YES),
        ("/workspace/output", YES),  # ** takes no segment too
        ("/workspace/output/", YES),
        ("/workspace//output/./deep/x", YES),
        ("/workspace/output/%41.txt", YES),  # every reading (as written, decoded) is inside
        ("/workspace/outputx/a", NO),
        ("/workspace/Output/a", NO),  # case-sensitive by default
        ("/etc/passwd", NO),
        ("/workspace/output/../../etc/passwd", UNKNOWN),  # '..' is never resolved
        ("/workspace/output/sub/..", UNKNOWN),
        ("/workspace/output/%2e%2e/%2e%2e/etc/passwd", UNKNOWN),  # a server that decodes would climb out
        ("/workspace/output/%2E%2E/x", UNKNOWN),
        ("/workspace/output/a%2f..%2f..%2fx", UNKNOWN),
        ("/workspace/output/%252e%252e/%252e%252e/etc", UNKNOWN),  # decoded twice
        ("/workspace/output/%ef%bc%8f..%ef%bc%8f..%ef%bc%8fetc", UNKNOWN),  # decoded, then NFKC
        ("／workspace／output／x", UNKNOWN),  # fullwidth solidus: relative as written
        ("/workspace/output／..／..／etc／passwd", UNKNOWN),  # NFKC makes it climb
        ("/workspace/output/x\\..\\..\\..\\etc", UNKNOWN),  # backslash as a separator
        ("/workspace/output/\x00x", UNKNOWN),
        ("/workspace/output/%00x", UNKNOWN),
        ("/workspace/output/%c0%ae%c0%ae/%c0%ae%c0%ae/etc", UNKNOWN),  # overlong UTF-8 for '.'
        ("/workspace/output/\u2024\u2024/\u2024\u2024/etc", UNKNOWN),  # one dot leaders: '..' once NFKC-folded
        ("workspace/output/a", UNKNOWN),  # relative
        ("", UNKNOWN),
        ("/workspace/output/" + "a" * 256, UNKNOWN),  # no file has a longer name
        ("/workspace/output/" + "a/" * 3000, UNKNOWN),  # too long to judge
    ],
)
def test_a_path_glob_holds_for_every_reading_or_is_unknown(path: str, expected: Truth) -> None:
    assert holds(OUTPUT, {"path": path}) == expected


@pytest.mark.parametrize("value", [None, 3, 2.5, True, ["/workspace/output/a"], {"p": "/workspace/output/a"}])
def test_a_missing_or_wrongly_typed_argument_is_unknown(value: Any) -> None:
    arguments = {} if value is None else {"path": value}
    assert holds(OUTPUT, arguments) == UNKNOWN
    assert holds({"not": OUTPUT}, arguments) == UNKNOWN  # not does not turn unknown into known


def test_glob_wildcards_stay_within_a_segment_and_double_star_spans_any_number() -> None:
    glob = {"arg": "p", "glob": "/srv/*/logs/**/*.log"}
    assert holds(glob, {"p": "/srv/api/logs/a.log"}) == YES
    assert holds(glob, {"p": "/srv/api/logs/2026/12/a.log"}) == YES
    assert holds(glob, {"p": "/srv/api/x/logs/a.log"}) == NO
    assert holds(glob, {"p": "/srv/api/logs/a.txt"}) == NO
    assert holds({"arg": "p", "glob": "/a/?.txt"}, {"p": "/a/b.txt"}) == YES
    assert holds({"arg": "p", "glob": "/a/?.txt"}, {"p": "/a/bc.txt"}) == NO


def test_case_is_compared_as_the_condition_says() -> None:
    loose = {"arg": "path", "glob": "/Workspace/Output/**", "case": "insensitive"}
    assert holds(loose, {"path": "/workspace/OUTPUT/a"}) == YES
    assert holds({"arg": "b", "equals": "Main", "case": "insensitive"}, {"b": "MAIN"}) == YES
    assert holds({"arg": "b", "equals": "Main"}, {"b": "MAIN"}) == NO


def test_path_prefix_and_equality_are_by_segment() -> None:
    under = {"arg": "p", "prefix": "/workspace/output", "path": True}
    assert holds(under, {"p": "/workspace/output/x"}) == YES
    assert holds(under, {"p": "/workspace/output-evil/x"}) == NO
    assert holds(under, {"p": "/workspace/output/../x"}) == UNKNOWN
    assert holds({"arg": "p", "equals": "/a/b", "path": True}, {"p": "//a/./b/"}) == YES


def test_plain_strings_equality_prefix_and_their_nfkc_reading() -> None:
    assert holds({"arg": "b", "equals": "main"}, {"b": "main"}) == YES
    assert holds({"arg": "b", "prefix": "feature/"}, {"b": "feature/x"}) == YES
    assert holds({"arg": "b", "prefix": "feature/"}, {"b": "fix/x"}) == NO
    # Fullwidth "ｍａｉｎ" is not "main" as written, but is once NFKC-folded: only a may.
    assert holds({"arg": "b", "equals": "main"}, {"b": "ｍａｉｎ"}) == Truth(False, True)
    assert holds({"arg": "b", "equals": "main"}, {"b": 5}) == UNKNOWN


def test_numbers_ranges_and_booleans() -> None:
    rng = {"arg": "n", "range": {"min": 1, "max": 100}}
    assert holds(rng, {"n": 1}) == YES
    assert holds(rng, {"n": 100.0}) == YES
    assert holds(rng, {"n": 101}) == NO
    assert holds(rng, {"n": "5"}) == UNKNOWN
    assert holds(rng, {"n": True}) == UNKNOWN  # a boolean is not a number here
    assert holds(rng, {"n": float("nan")}) == UNKNOWN
    assert holds({"arg": "n", "equals": 3}, {"n": 3.0}) == YES
    assert holds({"arg": "f", "equals": True}, {"f": True}) == YES
    assert holds({"arg": "f", "equals": True}, {"f": 1}) == UNKNOWN


def test_all_any_not_combine_must_and_may() -> None:
    inside = {"arg": "path", "glob": "/w/**"}
    small = {"arg": "n", "range": {"max": 10}}
    assert holds({"all": [inside, small]}, {"path": "/w/a", "n": 3}) == YES
    assert holds({"all": [inside, small]}, {"path": "/w/a", "n": 30}) == NO
    assert holds({"all": [inside, small]}, {"path": "/w/a"}) == UNKNOWN
    assert holds({"any": [inside, small]}, {"path": "/x", "n": 3}) == YES
    assert holds({"any": [inside, small]}, {"path": "/x"}) == UNKNOWN
    assert holds({"not": inside}, {"path": "/x"}) == YES
    assert holds({"not": inside}, {"path": "/w/../x"}) == UNKNOWN


def test_rules_fire_in_order_allow_on_must_and_approve_or_refuse_on_may() -> None:
    rules = [
        ArgRule.model_validate({"name": "output area", "if": OUTPUT, "then": "allow"}),
        ArgRule.model_validate({"if": {"arg": "path", "glob": "/etc/**"}, "then": "refuse"}),
    ]
    assert rule(rules, "approve", {"path": "/workspace/output/a"}) is not None
    assert rule(rules, "approve", {"path": "/workspace/output/a"}).action == "allow"  # type: ignore[union-attr]
    assert rule(rules, "approve", {"path": "/etc/shadow"}).label == "when[1]"  # type: ignore[union-attr]
    # Unknown: never allowed, always caught by a refusing rule.
    hostile = rule(rules, "approve", {"path": "/workspace/output/../../etc/passwd"})
    assert hostile is not None and (hostile.action, hostile.label) == ("refuse", "when[1]")
    assert rule(rules, "approve", {"path": "/srv/x"}).label == "otherwise"  # type: ignore[union-attr]
    assert rule(rules, None, {"path": "/srv/x"}) is None
    assert rule(rules, None, None).action == "refuse"  # type: ignore[union-attr]  # no arguments: unknown, caught


def test_the_plan_text_of_rules() -> None:
    rules = [ArgRule.model_validate({"name": "out", "if": {"all": [OUTPUT, {"not": {"arg": "n", "range": {"min": 5}}}]}, "then": "allow"})]
    assert rules_text(rules, "refuse") == ['when[0] (out): if (path matches glob "/workspace/output/**" and not (n >= 5)) then allow', "otherwise: refuse"]


# ---------------------------------------------------------------- regex


@pytest.mark.parametrize("pattern", [r"[a-z]+\.txt", r"^abc$", r"(a|ab)*c?", r"a{2,4}", r"\d{3}-\d{4}", r"x|y|zz", r"[^/]+", r"\w+\s?\S*", r"(?:ab)+"])
@pytest.mark.parametrize("value", ["abc.txt", "abc", "aaab", "aaaa", "123-4567", "zz", "", "ababc", "a\n", "ab", "a b", "ab/c", "ÄÖ_1"])
def test_the_safe_regex_agrees_with_re_fullmatch(pattern: str, value: str) -> None:
    assert SafeRegex(pattern).fullmatch(value) == (re.fullmatch(pattern, value) is not None)


@pytest.mark.parametrize(
    "pattern", [r"(a)\1", r"(?=a)b", r"(?<!a)b", r"(?i)abc", r"a^b", r"a\bb", r"(?>a+)", r"a++", r"(a)?(?(1)b|c)", "a" * 300, r"(a{50}){50}", "[", r"\Ba"]
)
def test_patterns_that_need_backtracking_or_are_too_large_are_refused(pattern: str) -> None:
    with pytest.raises(RegexRefused):
        SafeRegex(pattern)


def test_catastrophic_patterns_run_in_linear_time() -> None:
    value = "a" * MAX_VALUE_CHARS
    for pattern in (r"(a|a)*(a+)+b", r"(a*)*b", r".*.*.*.*x", r"(a|aa)+b"):
        started = time.perf_counter()
        assert SafeRegex(pattern).fullmatch(value) is False
        assert time.perf_counter() - started < 0.5, pattern
    assert SafeRegex("a*").fullmatch("a" * (MAX_VALUE_CHARS + 1)) is None


def test_a_regex_condition_holds_only_when_both_readings_match() -> None:
    assert holds({"arg": "n", "regex": "[a-z-]{1,10}"}, {"n": "my-repo"}) == YES
    assert holds({"arg": "n", "regex": "[a-z-]{1,10}"}, {"n": "my-repo!"}) == NO
    assert holds({"arg": "n", "regex": "ABC", "case": "insensitive"}, {"n": "abc"}) == YES
    assert SafeRegex(r"[^\s\S]x").can_match() is False
    assert SafeRegex(r"a|[^\d\D]").can_match() is True


# ---------------------------------------------------------------- the spec


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"arg": "p", "glob": "workspace/**"}, "absolute"),
        ({"arg": "p", "glob": "/a/../b/**"}, "'..'"),
        ({"arg": "p", "glob": "/a//b"}, "empty"),
        ({"arg": "p", "glob": "/a/b/"}, "trailing slash"),
        ({"arg": "p", "glob": "/a/%2e/b"}, "percent"),
        ({"arg": "p", "glob": "／a"}, "absolute"),
        ({"arg": "p", "glob": "/a/b**"}, "whole segment"),
        ({"arg": "p", "glob": "/a/[ab]"}, "only *"),
        ({"arg": "p", "glob": "/a", "equals": "x"}, "exactly one"),
        ({"arg": "p"}, "exactly one"),
        ({"arg": "p", "regex": "(a)\\1"}, "backtracking"),
        ({"arg": "p", "regex": ".*", "path": True}, "path: true"),
        ({"arg": "p", "range": {}}, "min, a max"),
        ({"arg": "p", "equals": 3, "path": True}, "compares strings"),
    ],
)
def test_the_spec_refuses_conditions_outside_the_language(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        ArgRule.model_validate({"if": data, "then": "allow"})


def test_nesting_and_otherwise_are_kept_small_and_meaningful() -> None:
    deep: dict[str, Any] = {"arg": "p", "equals": "x"}
    for _ in range(4):
        deep = {"not": deep}
    with pytest.raises(ValidationError, match="nested"):
        ArgRule.model_validate({"if": deep, "then": "allow"})
    with pytest.raises(ValidationError, match="otherwise goes with when"):
        Tool.model_validate({"otherwise": "refuse"})
    tool = Tool.model_validate({"when": [{"if": OUTPUT, "then": "allow"}], "otherwise": "approve"})
    assert isinstance(tool.when[0].if_, ArgTest)
    assert Tool.model_validate({}).when == []  # old specs stay valid


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ('{if: {arg: path, glob: "out/**"}, then: allow}', "s.yaml:8:21: SC004 servers.a.tools.w.when[0].if: 'out/**': a path condition is absolute"),
        ('{if: {all: [{arg: p, regex: "(a)\\\\1"}]}, then: allow}', "s.yaml:8:28: SC004 servers.a.tools.w.when[0].if.all[0]: regex '(a)\\\\1': groupref"),
        ("{if: {not: {arg: p}}, then: allow}", "s.yaml:8:27: SC004 servers.a.tools.w.when[0].if.not: an argument test has exactly one"),
        ("{if: {arg: p, globb: /x}, then: allow}", "s.yaml:8:30: SC001 unknown key 'globb' in servers.a.tools.w.when[0].if; did you mean 'glob'?"),
        ("{if: {arg: p, equals: x}, then: maybe}", "s.yaml:8:48: SC004 servers.a.tools.w.when[0].then: Input should be 'allow', 'approve' or 'refuse'"),
    ],
)
def test_a_bad_rule_is_reported_at_its_place_in_the_file(rule: str, expected: str) -> None:
    from mcpspec.api import load_text
    from mcpspec.diagnostics import SpecError

    text = f"version: 1\nproject: p\nservers:\n  a:\n    command: [x]\n    tools:\n      w:\n        when: [{rule}]\n"
    with pytest.raises(SpecError) as caught:
        load_text(text, "s.yaml")
    assert caught.value.diagnostics[0].format().startswith(expected)


def test_the_approver_is_told_which_rule_sent_the_call_and_a_per_session_answer_stays_with_it() -> None:
    import asyncio

    from mcpspec.run.approvals import ApprovalRequest, Approvals

    rule_line = 'when[1] (elsewhere): if path matches glob "/srv/**" then approve'
    approvals = Approvals(["/bin/true"], 10, [], True)
    asked = ApprovalRequest("files", "write_file", ("writes_local",), "a", "r", {"path": "/srv/x"}, "per-session", rule_line)
    assert approvals.payload(asked)["condition"] == rule_line
    prompt = approvals.prompt(asked)
    assert prompt is not None and f"  condition: {json.dumps(rule_line)}" in prompt
    plain = ApprovalRequest("files", "write_file", ("writes_local",), "a", "r", {"path": "/srv/x"}, "per-session")
    assert "condition" not in approvals.payload(plain)

    async def both() -> tuple[str, str]:
        first = await approvals.decide(asked)
        second = await approvals.decide(plain)  # approved under another rule (or none): asked again
        return first.approver, second.approver

    assert asyncio.run(both()) == ("command", "command")


@pytest.mark.parametrize(
    "value",
    [" rm -rf /", "\trm -rf /", "\\rm -rf /", "/bin/rm -rf /", "'rm' -rf /", "r\u200bm -rf /", "\uff52\uff4d -rf /", "r\u043c -rf /", "\x00rm", "rm\x00x"],
)
def test_a_caught_reading_fires_a_refuse_rule_but_never_an_allow_rule(value: str) -> None:
    """Spellings a server may read as the refused value: a refuse rule (may) catches them; an allow rule
    (must) holds only on what the server surely reads, so none of them is allowed by `prefix: rm` either."""
    assert holds({"arg": "c", "prefix": "rm"}, {"c": value}) == UNKNOWN


def test_caught_readings_leave_allow_rules_on_exact_values_as_they_were() -> None:
    assert holds({"arg": "c", "equals": "it's"}, {"c": "it's"}) == YES  # a shell would read "its": an allow rule does not care
    assert holds({"arg": "c", "equals": "C:\\data"}, {"c": "C:\\data"}) == YES
    assert holds({"arg": "c", "equals": "git status"}, {"c": " git status"}) == Truth(False, True)  # not allowed, but caught
    assert holds({"not": {"arg": "c", "prefix": "rm"}}, {"c": " rm -rf /"}) == Truth(False, True)  # `not` of a caught value is not allowed
    assert holds({"arg": "c", "prefix": "rm"}, {"c": "$(printf rm) -rf /"}) == NO  # the blocklist's limit (HR008)
    assert holds({"arg": "c", "regex": "rm -rf .*"}, {"c": "rm\t -rf  /"}) == UNKNOWN  # a shell splits words at any blanks
