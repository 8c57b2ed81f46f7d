"""Fuzzing `mcpspec import`: whatever a client's config holds, a spec or an ImportFailure that
names the file, never an exception; and the spec written is YAML that lint reads without one.

The configs are the client fixtures with values replaced by other types and odd strings
(shell syntax, newlines, paths, URLs with credentials), keys dropped and entries emptied,
written back in each file's own syntax; and token soup in every syntax the importer reads.
``MCPSPEC_FUZZ_EXAMPLES`` runs more cases, as in tests/test_fuzz_loader.py.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from conftest import REPO
from fuzzing import FUZZ, mutate
from mcpspec import api
from mcpspec.importer.reading import ImportFailure, parse, syntax_of
from mcpspec.importer.run import import_config
from mcpspec.settings import Settings
from mcpspec.source.discover import SpecText

CLIENT_DIR = REPO / "tests" / "clients"
# Each fixture the mutations start from, by file name: its client and parsed data. TOML has no
# writer in the standard library, so the codex fixture is fuzzed as token soup only.
MUTABLE = {
    path.name: parse(path.read_text(encoding="utf-8"), syntax_of(path) if path.suffix != ".yaml" else "yaml", str(path))
    for path in sorted(CLIENT_DIR.iterdir())
    if path.suffix in (".json", ".yaml")
}
CLIENT_OF = {
    "claude_desktop_config.json": "claude-desktop", "claude-code.mcp.json": "claude-code", "vscode-mcp.json": "vscode",
    "cursor-mcp.json": "cursor", "windsurf_mcp_config.json": "windsurf", "gemini-settings.json": "gemini",
    "zed-settings.json": "zed", "cline_mcp_settings.json": "cline", "continue-config.yaml": "continue",
    "claude_desktop_config-realistic.json": "claude-desktop", "vscode-realistic-mcp.json": "vscode",
}
ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.just(""), st.just("$(id)"),
    st.just("a\nb: c"), st.just("--token=ghp_" + "b" * 36), st.just("https://user:pw@example.invalid/x"), st.just("../.."),
    st.just("npx"), st.just("-y"), st.just("docker"), st.just("${env:HOME}"), st.just("\x00"), st.just("#"),
    st.text(max_size=10), st.lists(st.text(max_size=6), max_size=4), st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3),
)
SOUP = st.lists(
    st.one_of(st.sampled_from(['{', '}', '[', ']', ':', ',', '"', "'", "=", "\n", "#", "//", "/*", "*/", "mcpServers", "servers",
                               "[mcp_servers.x]", "command", "args", "env", "url", "headers", "npx", "\\", "\x00", "\ufeff", "名", "[" * 2000]),
              st.text(max_size=4)),
    max_size=40,
).map("".join)


@st.composite
def mutated_configs(draw: st.DrawFn) -> tuple[str, str]:
    """A fixture's file name and its text with a few values changed, in the fixture's syntax."""
    name = draw(st.sampled_from(sorted(MUTABLE)))
    data = mutate(draw, MUTABLE[name], ODD, [])
    text = yaml.safe_dump(data, allow_unicode=True) if name.endswith(".yaml") else json.dumps(data)
    return name, text


def _import(name: str, text: str, client: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            imported = import_config(path, client, "fuzz")
        except ImportFailure as exc:
            assert str(exc).startswith(str(path)) or "unknown client" in str(exc), exc
            event("refused")
            return
    event(f"imported {imported.servers} servers")
    yaml.safe_load(imported.text)  # the spec written is YAML
    found = api.lint_file(SpecText("imported.yaml", imported.text.encode("utf-8", "surrogatepass")), Settings().lint_options("imported.yaml"))
    assert all(result.message for result in found.results)


@FUZZ
@given(mutated_configs())
def test_import_of_a_mutated_client_config_never_raises(config: tuple[str, str]) -> None:
    name, text = config
    _import(name, text, CLIENT_OF[name])


@FUZZ
@given(mutated_configs())
def test_auto_detection_of_a_mutated_client_config_never_raises(config: tuple[str, str]) -> None:
    name, text = config
    _import(name, text, "auto")


@pytest.mark.parametrize("name", ["mcp.json", "config.toml", "config.yaml"])
@FUZZ
@given(text=SOUP)
def test_import_of_token_soup_never_raises(name: str, text: str) -> None:
    _import(name, text, "auto")


def test_every_json_and_yaml_fixture_is_mutated() -> None:
    assert set(MUTABLE) == set(CLIENT_OF)
