"""`graph --format json` is written in pieces: the pieces make the same document as json_data, in many parts."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from mcpspec.analysis.graph import build
from mcpspec.api import load
from mcpspec.report.graph import json_graph
from mcpspec.report.graph.view_model import view
from mcpspec.rules.pipeline import LintOptions, lint_plan


@pytest.mark.parametrize("name", ["risky.yaml", "coding-agent.yaml"])
def test_the_pieces_are_the_document(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = load(REPO / "examples" / name)
    shown = view(build(plan), lint_plan(plan, LintOptions()))
    whole = json_graph.render_json(shown)
    monkeypatch.setattr(json_graph, "CHUNK", 64)
    pieces = list(json_graph.json_chunks(shown))
    assert len(pieces) > 10  # written as it is encoded, not at the end
    assert "".join(pieces) == whole and whole.endswith("}\n") and "\n" not in whole[:-1]
    assert json.loads(whole) == json.loads(json.dumps(json_graph.json_data(shown)))
