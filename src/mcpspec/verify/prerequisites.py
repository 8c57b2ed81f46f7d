"""What the host lacks for each server's launch, found before verify runs anything.

The check is the launcher's own (``runtime.host_problems``, run on the launcher's CONFIG), so
verify and the launcher cannot disagree about what a host needs; verify reports every missing
prerequisite of every server at once, and names the build's host preparation file.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from mcpspec.targets.bwrap import runtime
from mcpspec.verify.checks import Row

CONTROL = "host: prerequisite"


def host_rows(server: str, config: dict[str, Any], spec: Path, build_dir: Path | None, top: str = "/") -> list[Row]:
    """One failed row per missing or wrong prerequisite of ``server`` (none: its launcher can start)."""
    loaded = runtime.Config.load(config)
    problems = runtime.host_problems(loaded, runtime.TrustedPaths(top))
    if not problems:
        return []
    prepare = how_to_prepare(loaded.host_prep, spec, build_dir)
    rows = []
    for problem in problems:
        expected = f"present (made by {prepare})" if problem.directory and prepare else "present before the launch"
        rows.append(Row(server, CONTROL, expected, problem.text, "fail"))
    return rows


def how_to_prepare(name: str, spec: Path, build_dir: Path | None) -> str:
    """The command that applies the build's host preparation file (it needs an absolute path)."""
    if not name:
        return ""
    if build_dir is not None:
        return f"systemd-tmpfiles --create {shlex.quote(os.path.join(build_dir.resolve(), name))}"
    return (f"mcpspec build {shlex.quote(str(spec))} --target bwrap --out DIR, then "
            f"systemd-tmpfiles --create \"$PWD\"/DIR/{shlex.quote(name)}")
