from __future__ import annotations

import datetime

import pytest

from mcpspec.diagnostics import Span, SpecError
from mcpspec.source import parse_text

TEXT = """\
version: 1   # trailing comment
servers:
  fetch:
    command: ["a#b", 'c']
    egress: {allow: ["x.example.com:443", "*.y.example.com:443"]}
    note: |
      # not a comment
      text
    # own-line comment
    mounts:
      - {from: /srv/a, to: /a}
      - from: /srv/b
        to: /b
"""


def test_values_and_keys_have_one_based_positions() -> None:
    data, source = parse_text(TEXT, "f.yaml")
    assert data["servers"]["fetch"]["command"] == ["a#b", "c"]
    assert source.key_span(("servers", "fetch")) == Span(3, 3, 3, 8)
    assert source.value_span(("version",)) == Span(1, 10, 1, 11)
    assert source.value_span(("servers", "fetch", "egress", "allow", 1)) == Span(5, 43, 5, 64)
    assert source.value_span(("servers", "fetch", "mounts", 1, "to")) == Span(13, 13, 13, 15)
    assert source.key_span(("servers", "fetch", "mounts", 1, "from")).line == 12


def test_missing_paths_fall_back_to_the_nearest_ancestor_key() -> None:
    _, source = parse_text(TEXT, "f.yaml")
    assert source.value_span(("servers", "fetch", "lifecycle", "idle_timeout")) == Span(3, 3, 3, 8)
    assert source.key_span(("servers", "fetch", "mounts", 0, "mode")).line == 11


def test_comments_are_found_but_hashes_inside_scalars_are_not() -> None:
    _, source = parse_text(TEXT, "f.yaml")
    comments = source.comments()
    assert [(c.line, c.col, c.text.strip(), c.own_line) for c in comments] == [
        (1, 14, "trailing comment", False),
        (9, 5, "own-line comment", True),
    ]


def test_yaml_11_oddities_do_not_leak_into_data() -> None:
    data, _ = parse_text("a: 1:30\nb: 2027-03-01\nc: 0x10\nd: '5'\ne: null\n", "f.yaml")
    assert data == {"a": "1:30", "b": datetime.date(2027, 3, 1), "c": 16, "d": "5", "e": None}


@pytest.mark.parametrize(
    ("text", "code", "line", "col"),
    [
        ("a: 1\na: 2\n", "YM002", 2, 1),
        ("a:\n\tb: 1\n", "YM003", 2, 1),
        ("a: !!python/object/apply:os.system ['true']\n", "YM004", 1, 4),
        ("a: &x [1]\nb: {<<: *x}\n", "YM004", 2, 5),
        ("a: 1\n---\nb: 2\n", "YM007", 2, 1),
        ("a: 1\n--- # second\n\nb: 2\n", "YM007", 2, 1),
        ("# only a comment\n", "YM008", 1, 1),
        ("a: [1, 2\n", "YM001", 1, 4),
        ("a: " + "[" * 70 + "]" * 70 + "\n", "YM006", 1, 68),
    ],
)
def test_bad_yaml_gives_one_positioned_diagnostic(text: str, code: str, line: int, col: int) -> None:
    with pytest.raises(SpecError) as caught:
        parse_text(text, "f.yaml")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.col) == (code, line, col)
    assert diagnostic.format().startswith(f"f.yaml:{line}:{col}: {code} ")


def test_duplicate_key_message_names_the_first_definition() -> None:
    with pytest.raises(SpecError) as caught:
        parse_text("servers:\n  a: {}\n  b: {}\n  a: {}\n", "f.yaml")
    assert "first defined at line 2" in caught.value.diagnostics[0].message
