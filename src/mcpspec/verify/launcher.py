"""A bwrap launcher whose server is replaced by the probe, and nothing else changed.

The launcher's ``CONFIG`` literal is located with ``ast``; only the spans of its ``command`` and
``mounts`` values are replaced (the command by the probe's, the mounts by the same list plus one
read-only bind of the probe file), and the result is parsed again and compared key by key with the
original: every other byte of the launcher, its runtime included, is what the build (or the
user's edit of it) says.
"""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

PROBE_INSIDE = "/run/mcpspec-verify/verify-probe"  # not *probe.py: other tests look for their own probe.py processes by name
PROBE_COMMAND = ["/usr/bin/python3", "-I", "-S", PROBE_INSIDE]


class LauncherError(Exception):
    """The file is not a bwrap launcher this version can rewrite."""


@dataclass(frozen=True)
class ProbeLauncher:
    """A rewritten launcher in a private directory, beside the files it reads, and its CONFIG."""

    command: Path
    config: dict[str, Any]


def _config_node(tree: ast.Module, name: str) -> ast.Dict:
    found = [node for node in tree.body if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["CONFIG"]]
    if len(found) != 1 or not isinstance(found[0].value, ast.Dict):
        raise LauncherError(f"{name}: not a bwrap launcher (no single CONFIG = {{...}} literal)")
    return found[0].value


def read_config(text: str, name: str) -> dict[str, Any]:
    """The launcher's CONFIG as data."""
    try:
        tree = ast.parse(text, name)
        value = ast.literal_eval(_config_node(tree, name))
    except (SyntaxError, ValueError) as exc:
        raise LauncherError(f"{name}: cannot read its CONFIG: {exc}") from None
    if not isinstance(value, dict) or not isinstance(value.get("command"), list) or not isinstance(value.get("mounts"), list):
        raise LauncherError(f"{name}: its CONFIG has no command or mounts list")
    return value


def _offsets(text: str) -> list[int]:
    """Character offset of the start of each line (ast positions are per line)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _span(text: str, node: ast.expr) -> tuple[int, int]:
    starts = _offsets(text)
    assert node.end_lineno is not None and node.end_col_offset is not None
    # ast columns count UTF-8 bytes; CONFIG is written in ASCII, so bytes and characters agree.
    return starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset


def probe_mount(source: str) -> dict[str, Any]:
    return {"kind": "host", "mode": "ro", "source": source, "target": PROBE_INSIDE, "size": 0}


def rewrite(text: str, name: str, probe_source: str) -> str:
    """``text`` with the server's command replaced by the probe's and the probe bound read-only."""
    original = read_config(text, name)
    if not text.isascii():
        raise LauncherError(f"{name}: a launcher is written in ASCII; this one is not")
    node = _config_node(ast.parse(text, name), name)
    values = {ast.literal_eval(key): value for key, value in zip(node.keys, node.values, strict=True) if key is not None}
    replacements = {"command": PROBE_COMMAND, "mounts": [*original["mounts"], probe_mount(probe_source)]}
    spans = sorted(((*_span(text, values[key]), ascii(value)) for key, value in replacements.items()), reverse=True)
    for start, end, literal in spans:
        text = text[:start] + literal + text[end:]
    changed = read_config(text, name)
    expected = {**original, **replacements}
    if changed != expected or set(changed) != set(original):
        raise LauncherError(f"{name}: rewriting the command changed more than the command")
    return text


@contextmanager
def probe_launcher(text: str, name: str, server: str, squid: str | None) -> Iterator[ProbeLauncher]:
    """Write the probe and the rewritten launcher ``text`` (with its squid config) to fresh directories;
    remove them after. ``text`` and ``squid`` are the bytes already checked: nothing is read again.

    The probe's directory is 0711 and the probe 0644, so the sandbox's uid (which bwrap resolves
    mounts as) reaches it; the launcher's is 0700."""
    probe_dir = Path(tempfile.mkdtemp(prefix="mcpspec-verify-probe-", dir="/tmp"))  # not TMPDIR: the sandbox uid must reach it
    launch_dir = Path(tempfile.mkdtemp(prefix="mcpspec-verify-"))
    try:
        os.chmod(probe_dir, 0o711)
        probe = probe_dir / "verify-probe"
        probe.write_text(resources.files(__package__).joinpath("probe.py").read_text(encoding="utf-8"), encoding="utf-8")
        probe.chmod(0o644)
        rewritten = launch_dir / f"{server}.py"
        rewritten.write_text(rewrite(text, name, str(probe)), encoding="utf-8")
        rewritten.chmod(0o700)
        if squid is not None:
            (launch_dir / f"{server}.squid.conf").write_text(squid, encoding="utf-8")
        yield ProbeLauncher(rewritten, read_config(text, name))
    finally:
        shutil.rmtree(launch_dir, ignore_errors=True)
        shutil.rmtree(probe_dir, ignore_errors=True)
