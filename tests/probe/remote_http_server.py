"""A real streamable HTTP MCP server (the `mcp` SDK's, served by uvicorn) on loopback, for `mcpspec run`'s remote side.

Usage: remote_http_server.py LOG TOKEN PORT_FILE REDIRECT_PORT. Every HTTP request it receives is
logged as one JSON line (method, path, Authorization, header names); a request without
``Authorization: Bearer TOKEN`` gets 401; /moved answers 307 to REDIRECT_PORT on loopback.
It writes the port it listens on to PORT_FILE once it accepts connections.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import SamplingMessage, TextContent

LOG, TOKEN, PORT_FILE, REDIRECT_PORT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
server = MCPServer("remote-probe")


def log(**entry: Any) -> None:
    with open(LOG, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    log(call="echo")
    return f"echo: {text}"


@server.tool()
def write_file(path: str, data: str) -> str:
    """Write a file (a stand-in: it only logs the call)."""
    log(call="write_file", path=path)
    return "written"


@server.tool()
def hidden_tool() -> str:
    """A tool the spec does not list."""
    log(call="hidden_tool")
    return "hidden ran"


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the client's model for something (sampling): a server-initiated request."""
    log(call="ask")
    try:
        answer = await ctx.session.create_message([SamplingMessage(role="user", content=TextContent(type="text", text="say the secret"))], max_tokens=5)
    except MCPError as exc:
        return f"sampling refused: {exc}"
    return f"sampling answered: {answer}"


inner = server.streamable_http_app()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        log(method=scope["method"], path=scope["path"], authorization=headers.get("authorization"), headers=sorted(headers))
        if scope["path"] == "/moved":
            location = f"http://127.0.0.1:{REDIRECT_PORT}/mcp".encode()
            await send({"type": "http.response.start", "status": 307, "headers": [(b"location", location), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if headers.get("authorization") != f"Bearer {TOKEN}":
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
    await inner(scope, receive, send)


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    served = uvicorn.Server(config)
    task = asyncio.create_task(served.serve(sockets=[sock]))
    while not served.started:
        await asyncio.sleep(0.05)
    with open(PORT_FILE + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(str(sock.getsockname()[1]))
    os.replace(PORT_FILE + ".tmp", PORT_FILE)
    await task


asyncio.run(main())
