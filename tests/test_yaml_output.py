"""The compose and k8s files are PyYAML's pure-Python emitter's text, whichever emitter wrote them.

``mcpspec.targets.yamlout`` hands plain-ASCII documents to libyaml's C emitter and every other
one to the Python emitter; here both paths are compared with the Python emitter alone, on
documents drawn from the plain class (where the C emitter must agree), from the whole of
Unicode (where the check must send them to Python), and on the edges where libyaml is known to
differ: empty keys, keys of 120 to 130 characters, carriage returns, non-ASCII, binary.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpspec.targets import yamlout
from mcpspec.targets.k8s.manifest import _Dumper as K8sDumper

SETTINGS = settings(max_examples=400, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
DUMPERS = [pytest.param(yaml.SafeDumper, id="compose"), pytest.param(K8sDumper, id="k8s")]
needs_libyaml = pytest.mark.skipif(not yamlout.C_EMITTER, reason="PyYAML is built without libyaml: only the Python emitter runs")

# Words YAML reads as something other than a string, indicators, and spaces where they matter.
SPECIAL = ["null", "~", "yes", "No", "on", "1", "-1", "0x1f", "1e3", ".inf", "2024-01-01", "- a", "-", "? x", "?", ":", ": x", "a: b", "a:b",
           "#x", "x #y", "x#y", "'", '"', "*a", "&a", "!t", "|", ">", "%", "@", "`", "[a]", "{a}", ",", "a,b", "---", "...", " a", "a ", " ",
           "$(X)", "$$", "a  b", "\\", "x" * 300, "a b " * 60]
ASCII = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40) | st.sampled_from(SPECIAL)
ANY = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20) | ASCII | st.sampled_from(["", "\r", "a\rb", "a\n", "\x85", "\u2028", "\ufeff", "é", "\t", "\x7f"])


def documents(text: st.SearchStrategy[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    leaves = text | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
    trees = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=25)
    return st.lists(st.dictionaries(text, trees, max_size=5), min_size=1, max_size=3)


def python(docs: list[Any], dumper: type[yaml.SafeDumper], explicit_start: bool) -> str:
    return str(yaml.dump_all(docs, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=False, width=2**16, explicit_start=explicit_start))


def same(docs: list[Any], dumper: type[yaml.SafeDumper]) -> None:
    for explicit_start in (False, True):
        assert yamlout.dump_all(docs, dumper, explicit_start) == python(docs, dumper, explicit_start)


@needs_libyaml
@pytest.mark.parametrize("dumper", DUMPERS)
@SETTINGS
@given(docs=documents(ASCII.filter(bool)))
def test_plain_ascii_documents_are_the_python_emitters_text(dumper: type[yaml.SafeDumper], docs: list[dict[str, Any]]) -> None:
    same(docs, dumper)


@pytest.mark.parametrize("dumper", DUMPERS)
@SETTINGS
@given(docs=documents(ANY))
@example(docs=[{"": None}])
@example(docs=[{"\r": "a\rb"}])
@example(docs=[{"k": "é", "l": ["\x85"]}])
def test_any_document_is_the_python_emitters_text(dumper: type[yaml.SafeDumper], docs: list[dict[str, Any]]) -> None:
    same(docs, dumper)


@pytest.mark.parametrize("dumper", DUMPERS)
@pytest.mark.parametrize("length", range(1, 140))
def test_keys_of_every_length_up_to_140(dumper: type[yaml.SafeDumper], length: int) -> None:
    """libyaml takes keys of 123 to 128 characters as simple keys, the Python emitter does not."""
    same([{"k" * length: "v", "nested": {"x" * length: ["y" * length]}}], dumper)


@pytest.mark.parametrize("dumper", DUMPERS)
@pytest.mark.parametrize("length", [yamlout.VALUE_MAX - 1, yamlout.VALUE_MAX, yamlout.VALUE_MAX + 1, 2**16 + 10])
def test_long_values(dumper: type[yaml.SafeDumper], length: int) -> None:
    value = ("ab " * length)[:length]
    same([{"a": value, "b": [value, {"c": value}]}], dumper)


@pytest.mark.parametrize("dumper", DUMPERS)
def test_shared_objects_and_other_types(dumper: type[yaml.SafeDumper]) -> None:
    """A dict or list used twice is anchored the same way; bytes, sets and dates go to Python."""
    shared = {"a": [1, 2]}
    same([{"x": shared, "y": shared, "z": shared["a"]}], dumper)
    same([{"b": b"\x00bin"}], dumper)
    same([{"s": {1, 2}}], dumper)
    same([{"k": 3, "t": True, "n": None, "f": 1.5e300, "e": [], "d": {}}], dumper)


def test_a_line_break_in_a_k8s_value_is_double_quoted() -> None:
    assert yamlout.dump_all([{"a": "x\ny"}], K8sDumper) == 'a: "x\\ny"\n'
