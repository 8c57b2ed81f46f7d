"""The `mcp` SDK's client over the remote bridge, for `mcpspec lock` of a remote server.

`mcpspec lock` reads what a server offers with the SDK's ClientSession, which speaks over a pair of
message streams. For a remote server those streams go through ``RemoteServer``, so the lock's
requests keep to the same rules as `mcpspec run`'s: checked addresses, no redirect, the credential
added on the way out, answers within their caps.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.run.audit import secret_values
from mcpspec.run.framing import PARSE_CAP, LineReader, Oversized
from mcpspec.run.launch import LaunchError
from mcpspec.run.remote import RemoteServer
from mcpspec.run.remote_address import RemoteRefused, parse_endpoint
from mcpspec.run.remote_side import credential_of
from mcpspec.spec.models import HttpTransport


class _NoAudit:
    def write(self, event: str, **fields: Any) -> None:
        pass


def remote_bridge(sandbox: EffectiveSandbox) -> RemoteServer:
    """The bridge to ``sandbox``'s URL with its credential; LaunchError when the spec cannot be honoured."""
    transport = sandbox.transport
    if not isinstance(transport, HttpTransport) or transport.type != "http" or not transport.url:
        raise LaunchError("an external server is reached over streamable HTTP: give transport {type: http, url: https://...}")
    try:
        endpoint = parse_endpoint(transport.url)
    except RemoteRefused as exc:
        raise LaunchError(str(exc)) from None

    def note(text: str) -> None:
        sys.stderr.write(f"mcpspec lock: {sandbox.name}: {text}\n")

    return RemoteServer(endpoint, credential_of(sandbox, secret_values(sandbox)), _NoAudit(), note)


@asynccontextmanager
async def remote_streams(bridge: RemoteServer) -> AsyncIterator[tuple[Any, Any]]:
    """(read, write) streams of SessionMessages over ``bridge``, as the SDK's stdio_client yields them."""
    to_server, from_server, task = await bridge.open()
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reading() -> None:
        reader = LineReader(from_server, cap=PARSE_CAP * 8)
        async with read_writer:
            while (line := await reader.next()) is not None:
                if isinstance(line, Oversized):
                    await reader.skip()
                    await read_writer.send(ValueError("a message of the server is too large"))
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValidationError as exc:
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def writing() -> None:
        async with write_reader:
            async for item in write_reader:
                to_server.write(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
                await to_server.drain()

    async with anyio.create_task_group() as group:
        group.start_soon(reading)
        group.start_soon(writing)
        try:
            yield read_stream, write_stream
        finally:
            to_server.close()  # the bridge ends the session at the server (DELETE) and closes
            with anyio.move_on_after(10):
                await task
            group.cancel_scope.cancel()
