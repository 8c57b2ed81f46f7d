"""Fuzzing the loader and the whole lint: whatever the bytes, a spec error with a position or
findings, never an exception; and the loader's event path never disagrees with composing.

Two generators: token soup (YAML's structural characters, anchors, tags, line breaks of
every kind, a BOM, NUL, wide characters) for the parser, and mutations of the real example
specs (a value replaced by another type, a key dropped or added, a list emptied) so the
text gets past YAML into validation, resolution and every rule. Runs are derandomized so CI
sees the same cases; ``MCPSPEC_FUZZ_EXAMPLES=5000`` fuzzes longer on a workstation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import FUZZ, SPECS, mutated_specs
from mcpspec import api
from mcpspec.diagnostics import SpecError
from mcpspec.rules.engine import LEVELS
from mcpspec.settings import Settings
from mcpspec.source import loader
from mcpspec.source.discover import SpecText
from mcpspec.source.events import build_from_events

TOKENS = [
    "a", "servers", "version", "b", ":", ": ", " ", "  ", "\n", "- ", "-", "#", "# mcpspec: ignore[NW001]", "'", '"', "\\",
    "&x ", "*x", "!!str ", "!!binary ", "!t ", "<<: ", "{", "}", "[", "]", ", ", "|", "|-", ">", "---\n", "...\n",
    "%YAML 1.1\n", "%TAG ! tag:x,1:\n", "\t", "\r\n", "\r", "\ufeff", "\x85", "\u2028", "\u2029", "\x00", "\x1b[31m",
    "1", "-1", "0o7", "1e9", ".inf", "true", "yes", "null", "~", "0x1G", "2001-02-30", "2001-02-03", "12:30:00",
    "é", "名前", "\U0001f600", "?", "? ", "@", "`", "%", "=", "ghp_" + "a" * 36, "[" * 100, "- " * 100,
]
SOUP = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=4)), max_size=60).map("".join)

def _lines(text: str) -> int:
    """One more than the lines of ``text`` (YAML breaks lines at NEL, LS and PS too; Python's splitlines at more)."""
    return len(text.splitlines()) + 1


def _assert_positioned(exc: SpecError, text: str) -> None:
    for diagnostic in exc.diagnostics:
        assert diagnostic.message, diagnostic
        assert 1 <= diagnostic.span.line <= _lines(text), (diagnostic, text)
        assert diagnostic.span.col >= 1, diagnostic


@FUZZ
@given(SOUP)
def test_any_text_parses_or_fails_with_a_positioned_spec_error(text: str) -> None:
    try:
        data, source = loader.parse_text(text, "fuzz.yaml")
    except SpecError as exc:
        _assert_positioned(exc, text)
        return
    assert source.text == text
    del data


@FUZZ
@given(SOUP)
def test_the_event_path_agrees_with_composing_on_any_text(text: str) -> None:
    builder = loader._Builder("f.yaml", text)
    fast = build_from_events(text, loader._Loader, builder.event_scalar, loader._IMPLICIT_FIRST, loader.MAX_DEPTH, loader.MAX_EXPANDED_NODES)
    if fast is None:
        return  # left to the composing path, which reports whatever is wrong
    composer = loader._Builder("f.yaml", text)
    composed = composer.build(yaml.compose(text, Loader=loader._Loader), 0)
    data, positions, hash_scalars = fast
    assert (repr(data), list(positions.marks), positions.children, hash_scalars) == (
        repr(composed), list(composer.positions.marks), composer.positions.children, composer.hash_scalars
    )


def _lint(text: str) -> None:
    """Lint ``text`` as standard input: spec errors or findings, each placed inside the text."""
    result = api.lint_file(SpecText("fuzz.yaml", text.encode("utf-8", "surrogatepass")), Settings().lint_options("fuzz.yaml"))
    for item in result.results:
        assert item.severity in LEVELS
        assert 1 <= item.span.line <= _lines(text), (item, text)
        assert item.message


@FUZZ
@given(SOUP)
def test_lint_of_any_text_never_raises(text: str) -> None:
    _lint(text)


@FUZZ
@given(st.one_of(mutated_specs(), mutated_specs(keep_types=True)))
def test_lint_of_a_mutated_real_spec_never_raises(text: str) -> None:
    _lint(text)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_the_mutation_bases_are_valid_specs(path: Path) -> None:
    """The mutations start from valid specs, so a mutation that keeps validity reaches the rules."""
    found = api.lint_file(path, Settings().lint_options(str(path)))
    assert not [r for r in found.results if r.severity == "error"]
