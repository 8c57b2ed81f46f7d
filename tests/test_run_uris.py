"""The URI rule of run/uris.py: what a listing hides stays hidden however a request spells it."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpspec.run.uris import allowed_by_template, hidden_resource, hidden_template, plain

HIDDEN = "file:///srv/notes/secret.txt"


def _upper_some(text: str, mask: int) -> str:
    return "".join(char.upper() if mask >> (index % 30) & 1 else char for index, char in enumerate(text))


def _encode_some(text: str, mask: int) -> str:
    return "".join(quote(char, safe="") if mask >> (index % 30) & 1 and char.isalnum() else char for index, char in enumerate(text))


SPELLINGS = st.tuples(st.integers(0, 2**30 - 1), st.integers(0, 2**30 - 1), st.sampled_from(["", "/", "?x=1", "#top", "//"]), st.booleans(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(SPELLINGS)
def test_every_spelling_of_a_hidden_resource_is_refused(spelling: tuple[int, int, str, bool, bool]) -> None:
    upper, encode, tail, twice, detour = spelling
    uri = HIDDEN.replace("/notes/", "/notes/x/../") if detour else HIDDEN
    uri = _encode_some(_upper_some(uri, upper), encode) + tail
    if twice:
        uri = uri.replace("%", "%25")
    assert hidden_resource(uri, {HIDDEN}) == HIDDEN, uri


@pytest.mark.parametrize(
    "uri",
    ["file:///srv/notes/secret.txt", "file:///srv/notes/secret.tx%74", "file:\\\\\\srv\\notes\\secret.txt", "file:///srv/notes/\uff53ecret.txt", "file:///srv/./notes//secret.txt/"],
)
def test_hidden_resource_spellings(uri: str) -> None:
    assert hidden_resource(uri, {HIDDEN}) == HIDDEN


@pytest.mark.parametrize("uri", ["file:///srv/notes/secret.txt.bak", "file:///srv/notes/public.txt", "file:///srv/secret.txt"])
def test_other_resources_are_not_taken_for_the_hidden_one(uri: str) -> None:
    assert hidden_resource(uri, {HIDDEN}) is None


@pytest.mark.parametrize(
    ("uri", "allowed"),
    [
        ("notes://hello", True), ("notes://hello%20world", True), ("notes://a/b", False), ("notes://..", False), ("notes://%2e%2e", False),
        ("notes://x%2Fy", False), ("notes://%2573", False), ("notes://a b", False), ("notes://a\\b", False), ("notes://\uff41", False),
        ("notes://%zz", False), ("notes://%c0%ae", False), ("other://hello", False), ("notes://a\x00", False),
    ],
)  # fmt: skip
def test_a_shown_template_allows_only_plain_uris_it_matches(uri: str, allowed: bool) -> None:
    assert (allowed_by_template(uri, ["notes://{title}"]) is not None) is allowed


@pytest.mark.parametrize("uri", ["vault://k", "VAULT://k", "vault://%6b", "vault:%2f%2fk", "vault://{key}"])
def test_a_uri_under_a_hidden_template_in_any_reading_is_found(uri: str) -> None:
    assert hidden_template(uri, {"vault://{key}"}) == "vault://{key}"


def test_reserved_expansion_matches_across_segments() -> None:
    assert allowed_by_template("files:///a/b/c.txt", ["files:///{+path}"]) is not None
    assert hidden_template("files:///a/b/c.txt", {"files:///{+path}"}) is not None
    assert not plain("files:///a/../c.txt")


def test_a_uri_too_long_to_judge_is_refused_unless_shown_exactly() -> None:
    from mcpspec.run.policy import ToolPolicy

    policy = ToolPolicy(sandbox=None, lock=None)  # type: ignore[arg-type]  # the resource rule reads no sandbox
    policy.hidden_items["resources"] = {"notes://secret"}
    climbing = "notes://" + "x/../" * 1000 + "secret"  # resolves to the hidden one, past the length a reading is judged to
    assert policy.resource_refusal(climbing) is not None
    assert policy.resource_refusal("notes://" + "a" * 5000) is not None
    policy.shown_items["resources"] = {"notes://" + "a" * 5000}
    assert policy.resource_refusal("notes://" + "a" * 5000) is None
    assert policy.resource_refusal("notes://public") is None


def test_a_uri_with_more_readings_than_are_judged_may_be_any_hidden_one() -> None:
    assert hidden_resource("notes://%" + "25" * 20 + "73ecret", {"notes://secret"}) == "notes://secret"  # decoded 21 times
    deep = "notes://%" + "25" * 80 + "73ecret"  # past the readings judged: unknown, so refused
    assert hidden_resource(deep, {"notes://other"}) == "notes://other"
    assert hidden_template(deep, {"vault://{key}"}) == "vault://{key}"
    assert hidden_resource(deep, set()) is None
