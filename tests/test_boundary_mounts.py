"""Mount containment against an independent oracle: if the check passes, every concrete file a spec
mount exposes (a path at or below its source, with its access) is exposed by some boundary mount;
and every mount the check flags exposes its own source beyond the boundary."""

from __future__ import annotations

import posixpath
from dataclasses import replace

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcpspec import api
from mcpspec.boundary.check import _mounts
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox

SEGMENTS = ["srv", "mcp", "mcpx", "data", "a", "b"]

sources = st.lists(st.sampled_from(SEGMENTS), min_size=0, max_size=3).map(lambda parts: "/" + "/".join(parts))
mounts = st.builds(
    lambda source, mode: EffectiveMount("host", source, "/mnt", mode, ("servers", "x", "mounts", 0), source),
    sources,
    st.sampled_from(["ro", "rw"]),
)


def exposes(mount: EffectiveMount, path: str, write: bool) -> bool:
    inside = posixpath.commonpath([mount.source, path]) == mount.source
    return inside and (mount.mode == "rw" or not write)


def _mount(source: str, mode: str) -> EffectiveMount:
    return EffectiveMount("host", source, "/mnt", mode, ("servers", "x", "mounts", 0), source)  # type: ignore[arg-type]


@settings(max_examples=1000, deadline=None)
@given(st.lists(mounts, max_size=3), st.lists(mounts, max_size=3), st.lists(st.sampled_from(SEGMENTS), max_size=2))
@example([_mount("/srv/mcpx", "ro")], [_mount("/srv/mcp", "rw")], [])  # a name prefix is not a parent
@example([_mount("/srv/mcp/data", "rw")], [_mount("/srv/mcp", "ro")], ["a"])  # rw is not within ro
def test_a_passing_mount_check_exposes_nothing_outside(spec: list[EffectiveMount], boundary: list[EffectiveMount], suffix: list[str]) -> None:
    sandbox = _sandbox(spec)
    ceiling = _sandbox(boundary)
    flagged = list(_mounts(sandbox, ceiling))
    for excess in flagged:
        source, mode = excess.message.split(" may mount ", 1)[1].split(";")[0].rsplit(" ", 1)
        assert not any(exposes(b, source, mode == "rw") for b in boundary), excess.message
    if flagged:
        return
    for mount in spec:
        path = posixpath.join(mount.source, *suffix)
        write = mount.mode == "rw"
        assert any(exposes(b, path, write) for b in boundary), f"{path} ({mount.mode}) passes, yet no boundary mount exposes it"


BASE = api.load_text("version: 1\nproject: p\nservers:\n  x:\n    command: [x]\n").servers["x"]


def _sandbox(mounts: list[EffectiveMount]) -> EffectiveSandbox:
    return replace(BASE, mounts=tuple(mounts))
