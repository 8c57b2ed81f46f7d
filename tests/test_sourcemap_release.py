"""graph releases the YAML node graph once lint's results are positioned: positions asked for later raise,
and the anchor spans remembered before are the ones a fresh map gives."""

from __future__ import annotations

import pytest

from conftest import REPO
from mcpspec.api import graph_file, load


def test_graph_file_releases_the_nodes_and_keeps_every_position() -> None:
    path = REPO / "examples" / "risky.yaml"
    shown, found = graph_file(path, keep_nodes=False)
    assert shown is not None and found.results
    fresh = load(path).source
    assert all(r.span == fresh.anchor_span(r.path) for r in found.results if r.path)
    released = shown.graph.plan.source
    with pytest.raises(RuntimeError, match="released"):
        released.anchor_span(("servers",))


def test_graph_file_keeps_the_nodes_by_default() -> None:
    shown, _ = graph_file(REPO / "examples" / "risky.yaml")
    assert shown is not None and shown.graph.plan.source.anchor_span(("servers",)).line > 1


def test_a_map_remembers_its_anchor_spans() -> None:
    source = load(REPO / "examples" / "risky.yaml").source
    first = source.anchor_span(("servers", "shell", "mounts", 1))
    assert source.anchor_span(("servers", "shell", "mounts", 1)) is first
