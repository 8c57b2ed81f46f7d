"""Property: no spelling of a path gets past a path condition. Whatever a hostile client writes
(dot segments, repeated and trailing slashes, percent-escapes, backslashes, fullwidth solidus and
other NFKC forms, case), if a glob or path prefix accepts it, then every way a server may read it
(any sequence of NFKC folding, percent-decoding and backslash-as-separator, then lexical resolution
of ``.`` and ``..`` as ``posixpath.normpath`` does) lands inside the condition's root."""

from __future__ import annotations

import itertools
import posixpath
import unicodedata
from typing import Any
from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpspec.conditions.evaluate import truth
from mcpspec.spec.conditions import ArgRule

PIECES = [
    "/", "//", ".", "..", "./", "../", "/..", "workspace", "output", "Output", "OUTPUT", "etc", "passwd", "a", "\uff0f", "\uff0e",
    "%2e", "%2E", "%2f", "%2F", "%25", "%252e", "%5c", "\\", "%", "\u0301", "\ufb01", "\u2215", "\u2044", "\u00c5", "A\u030a", "\u212b",
    "ｏｕｔｐｕｔ", "\x00", " ", "~", "%ef%bc%8f",
]  # fmt: skip
ROOT = "/workspace/output"
CONDITIONS = [
    ({"arg": "path", "glob": ROOT + "/**"}, False),
    ({"arg": "path", "glob": ROOT + "/*/**"}, False),
    ({"arg": "path", "prefix": ROOT, "path": True}, False),
    ({"arg": "path", "glob": "/Workspace/OUTPUT/**", "case": "insensitive"}, True),
]
TRANSFORMS = (
    lambda text: unicodedata.normalize("NFKC", text),
    lambda text: unquote(text, errors="surrogateescape"),
    lambda text: text.replace("\\", "/"),
)


def server_readings(value: str) -> set[str]:
    """What a server might open: the argument after up to four of the transforms, in any order."""
    out = {value}
    for length in range(1, 5):
        for chain in itertools.product(TRANSFORMS, repeat=length):
            text = value
            for step in chain:
                text = step(text)
            out.add(text)
    return out


def inside(path: str, root: str, casefold: bool) -> bool:
    resolved = posixpath.normpath(path)
    if casefold:
        resolved, root = resolved.casefold(), root.casefold()
    return resolved == root or resolved.startswith(root + "/")


paths = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=14).map("".join).map(lambda tail: ROOT + "/" + tail),
    st.lists(st.sampled_from(PIECES), max_size=14).map("".join),
    st.text(max_size=40).map(lambda tail: ROOT + "/" + tail),
)


@settings(max_examples=3000, deadline=None)
@given(path=paths, which=st.sampled_from(range(len(CONDITIONS))))
def test_an_accepted_path_is_inside_the_root_however_the_server_reads_it(path: str, which: int) -> None:
    data, casefold = CONDITIONS[which]
    condition: Any = ArgRule.model_validate({"if": data, "then": "allow"}).if_
    result = truth(condition, {"path": path})
    if result.must:
        for reading in server_readings(path):
            assert "\x00" not in reading
            assert inside(reading, ROOT, casefold), (path, reading)


def test_the_generator_does_reach_accepted_and_hostile_paths() -> None:
    condition: Any = ArgRule.model_validate({"if": CONDITIONS[0][0], "then": "allow"}).if_
    assert truth(condition, {"path": ROOT + "/a/./b//"}).must
    assert not truth(condition, {"path": ROOT + "/%2e%2e/x"}).must
