"""Fuzzing the config file (`.mcpspec.yaml`, pyproject.toml's [tool.mcpspec]): whatever it holds,
the settings or a ConfigError naming the file, never an exception."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from fuzzing import FUZZ, mutate
from mcpspec.config import ConfigError, load_config

VALID = {
    "select": ["FS", "NW001", "shared-secret"], "ignore": ["LG"], "fail-on": "medium", "severity": {"FS004": "high"},
    "per-file-ignores": {"tests/*.yaml": ["SE001"]}, "baseline": ".mcpspec-baseline.json", "no-inline-suppressions": False,
    "docs-url": "https://docs.example.invalid/rules/", "approver": "notify-send --wait", "approver-timeout": 30,
}
ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.just(""), st.just("*"), st.just("FS0044"),
    st.just("../../etc/passwd"), st.just("$(id)"), st.just("javascript:alert(1)"), st.just("x\ny"), st.text(max_size=8),
    st.lists(st.text(max_size=6), max_size=3), st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2),
)
TOML_LINES = [
    "[tool]", "[tool.mcpspec]", "[[tool.mcpspec]]", "[tool.mcpspec.severity]", "[tool.mcpspec.per-file-ignores]", "tool = 1", "tool = 'x'",
    "mcpspec = 2", "mcpspec = []", "tool.mcpspec = 3", "select = ['FS', 'NW001']", "select = 1", "select = [1, 2]", "ignore = 'LG'",
    "fail-on = 'high'", "fail-on = 'hgih'", "FS004 = 'high'", "FS004 = 1", "'*.yaml' = ['SE001']", "'*.yaml' = 'x'", "baseline = 1",
    "approver = ''", "approver = 'a \\' b'", "approver-timeout = -1", "docs-url = 'ftp://x'", "no-inline-suppressions = 'yes'", "select = " + "[" * 2000,
]
TOML_SOUP = st.one_of(
    st.lists(st.sampled_from(TOML_LINES), max_size=8).map("\n".join),
    st.lists(st.one_of(st.sampled_from([*TOML_LINES, "[", "]", "{", "}", "=", '"', "'", "\n", ",", "\\", "\x00", "名"]), st.text(max_size=3)), max_size=30).map("".join),
)


def _load(name: str, text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            load_config(path)
        except ConfigError as exc:
            assert str(exc).startswith(str(path)), exc
            event("refused")
            return
        event("read")


@st.composite
def mutated_configs(draw: st.DrawFn) -> str:
    return yaml.safe_dump(mutate(draw, VALID, ODD, ["extra", "select", "ignore", "fail_on"]), allow_unicode=True)


@FUZZ
@given(mutated_configs())
def test_a_mutated_config_reads_or_is_refused_naming_the_file(text: str) -> None:
    _load(".mcpspec.yaml", text)


@FUZZ
@given(TOML_SOUP)
def test_any_pyproject_reads_or_is_refused_naming_the_file(text: str) -> None:
    _load("pyproject.toml", text)


def test_the_unmutated_config_is_valid(tmp_path: Path) -> None:
    path = tmp_path / ".mcpspec.yaml"
    path.write_text(yaml.safe_dump(VALID), encoding="utf-8")
    assert load_config(path).fail_on == "medium"


def test_a_pyproject_whose_tool_table_is_no_table_is_refused(tmp_path: Path) -> None:
    """`tool = 1` once crashed the reader (found by this file's fuzzing)."""
    path = tmp_path / "pyproject.toml"
    path.write_text("tool = 1\n", encoding="utf-8")
    try:
        load_config(path)
    except ConfigError as exc:
        assert str(exc).startswith(f"{path}:1:1: a config is a mapping")
    else:
        raise AssertionError("read")
