"""The lines the relay writes to one of its sides, read back as JSON objects (by the remote and
the listening bridges, which sit on the other end of the relay's streams)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from mcpspec.run.framing import LineReader, Oversized


async def relay_messages(stream: asyncio.StreamReader, cap: int) -> AsyncIterator[tuple[dict[str, Any], bytes]]:
    """Each JSON object the relay wrote, with its line; a line over ``cap`` or not an object is skipped."""
    reader = LineReader(stream, cap=cap)
    while (item := await reader.next()) is not None:
        if isinstance(item, Oversized):
            await reader.skip()
            continue
        try:
            message = json.loads(item)
        except ValueError:
            continue
        if isinstance(message, dict):
            yield message, item
