"""`effects: [none]`, `ttl: none` and `scopes: none`: a decision said on purpose, and a positioned error when misused."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpspec.api import load
from mcpspec.diagnostics import SpecError

HEAD = "version: 1\nproject: demo\n"
SECRET = HEAD + "secrets:\n  tok:\n    provider: env\n    ref: TOK\n    {field}\nservers:\n  s:\n    command: [mcp-s]\n    secrets: [{{use: tok, as: {{env: TOK}}}}]\n"
TOOL = HEAD + "servers:\n  s:\n    command: [mcp-s]\n    tools:\n      t: {{effects: {effects}}}\n"


def errors(tmp_path: Path, text: str) -> list[str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load(spec, display_name="spec.yaml")
    return [diagnostic.format() for diagnostic in caught.value.diagnostics]


@pytest.mark.parametrize(
    ("effects", "where", "words"),
    [
        ("[none, writes_local]", "7:20", "'none' says the tool has no effects, so it cannot be listed with writes_local"),
        ("[reads_private, none]", "7:20", "cannot be listed with reads_private"),
        ("[nothing]", "7:21", "'none'"),
    ],
)
def test_effects_none_stands_alone(tmp_path: Path, effects: str, where: str, words: str) -> None:
    found = errors(tmp_path, TOOL.format(effects=effects))
    assert len(found) == 1 and f"spec.yaml:{where}:" in found[0] and words in found[0], found


@pytest.mark.parametrize(
    ("field", "where", "words"),
    [
        ("ttl: never", "7:10", "'never' is not a ttl: write a duration such as '1h' or '30d', or 'none' for a credential that does not expire"),
        ("ttl: 3600", "7:10", "a duration needs a unit"),
        ("scopes: all", "7:13", "or 'none' for a credential that has no scopes, not 'all'"),
        ("scopes: [repo, none]", "7:13", "write 'scopes: none' alone"),
        ("scopes: ['']", "7:13", "each scope is a non-empty string"),
    ],
)
def test_secret_none_values_are_checked(tmp_path: Path, field: str, where: str, words: str) -> None:
    found = errors(tmp_path, SECRET.format(field=field))
    assert len(found) == 1 and f"spec.yaml:{where}:" in found[0] and words in found[0], found


def test_none_reaches_the_plan_as_no_expiry_and_no_scopes(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SECRET.format(field="ttl: none\n    scopes: none"), encoding="utf-8")
    plan = load(spec)
    (grant,) = plan.servers["s"].secrets
    assert grant.ttl is None and grant.scopes == ()
    assert plan.spec.secrets["tok"].ttl == "none" and plan.spec.secrets["tok"].scopes == "none"
