"""The launcher's standard error, passed on by `mcpspec run`: masked, whole lines, marked as the server's.

The sandboxed server writes to the launcher's stderr, which is mcpspec run's: the MCP client's log,
and the audit log when the sink is ``stderr`` (the default). Passed straight through, a server could
print its own secrets there, end a line early so the next audit line is no longer JSON, print a line
that reads as an audit line, or draw a fake approval prompt on a terminal. So each line is masked
as audit lines are, control characters are escaped, and every line is prefixed with the server's
name, except the launcher's own launch audit line (a JSON object whose event is ``launch``).
Each line is one write, so it never lands inside an audit line.
"""

from __future__ import annotations

import asyncio
import json
import re

from mcpspec.run.audit import Masker, write_all
from mcpspec.run.framing import LineReader, Oversized

LINE_CAP = 64 * 1024
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def _launch_line(text: str) -> bool:
    if not text.startswith('{"event":"launch"'):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def clean(text: str, masker: Masker) -> str:
    """``text`` fit for mcpspec run's stderr: masked, control characters escaped (no line break either)."""
    return _CONTROL.sub(_escape, masker.mask_text(text))


def shown(line: bytes, server: str, masker: Masker) -> bytes:
    """One line of the launcher's stderr as mcpspec run writes it (with its newline)."""
    text = line.decode("utf-8", "replace").rstrip("\r")
    text = masker.mask_text(text) if _launch_line(masker.mask_text(text)) else f"{server}: {clean(text, masker)}"
    return (text + "\n").encode("utf-8", "replace")


async def pass_stderr(reader: asyncio.StreamReader, server: str, masker: Masker) -> None:
    """Copy the launcher's stderr to ours until its end."""
    lines = LineReader(reader, cap=LINE_CAP)
    while (item := await lines.next()) is not None:
        if isinstance(item, Oversized):  # never shown in part: a secret could straddle the cut
            await lines.skip()
            write_all(2, f"{server}: [a line of more than {LINE_CAP // 1024} KiB on the server's stderr, not shown]\n".encode())
        else:
            write_all(2, shown(item, server, masker))
