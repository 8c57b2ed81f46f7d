from __future__ import annotations

import pytest

from mcpspec.diagnostics import format_path, parse_path


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("servers", "fetch", "egress", "allow", 1), "servers.fetch.egress.allow[1]"),
        (("servers", "issues-ro"), "servers.issues-ro"),
        (("servers", "x", "tools", "read.file"), 'servers.x.tools["read.file"]'),
        (("waivers", 0, "at"), "waivers[0].at"),
    ],
)
def test_logical_paths_round_trip(path: tuple[str | int, ...], text: str) -> None:
    assert format_path(path) == text
    assert parse_path(text) == path


@pytest.mark.parametrize("text", ["", ".servers", "servers..x", "servers[x]", "servers fetch"])
def test_malformed_paths_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_path(text)
