"""Run a Python MCP server (argv[1], its arguments after it) with asyncio waking its loop by write(2).

Codex's network-off seccomp filter refuses send(2) on every socket, the AF_UNIX socketpair
asyncio wakes its loop with included; the `mcp` SDK reads stdin in a worker thread whose
result wakes the loop that way, so the probe server would wait forever for its first request.
write(2) on the same socket is allowed and does the same. Only the codex-profile tests use it.
"""

from __future__ import annotations

import asyncio.selector_events
import contextlib
import os
import runpy
import sys


def _write_to_self(self: asyncio.selector_events.BaseSelectorEventLoop) -> None:
    csock = self._csock  # type: ignore[attr-defined]
    if csock is None:
        return
    with contextlib.suppress(OSError):  # full: the loop wakes anyway
        os.write(csock.fileno(), b"\0")


asyncio.selector_events.BaseSelectorEventLoop._write_to_self = _write_to_self  # type: ignore[method-assign]
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
