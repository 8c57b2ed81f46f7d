"""The probe server (its tools) on the `mcp` SDK's handshake-only loop: it speaks the 2025 revisions
and nothing of 2026-07-28 (no server/discover, no per-request envelope), as servers built on older SDKs."""

from __future__ import annotations

import anyio
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from probe_server import server  # beside this script in /probe


async def main() -> None:
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream), lowlevel.lifespan(lowlevel) as state:
        await serve_loop(lowlevel, read_stream, write_stream, lifespan_state=state, init_options=lowlevel.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
