"""`mcpspec run --listen 127.0.0.1:PORT`: the relay's client side as a streamable HTTP endpoint on loopback.

One MCP session per run, as over stdio. Every request must carry ``Authorization: Bearer TOKEN``
(a random token made for this run, compared in constant time) and a Host header naming the
loopback address it was sent to (a browser page that resolved its own name to 127.0.0.1 is refused:
DNS rebinding); a request with an Origin header is refused (no browser is a client). The
Authorization header is checked and dropped: only the JSON-RPC body reaches the relay, so a token
from the client never travels further. Answers to requests come back as a JSON body; the relay's
other messages to the client (notifications) go to the GET stream when one is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import re
import secrets
import socket
from typing import Any

from mcpspec.run.framing import PARSE_CAP, STREAM_CAP, FramingError, dump, parse_line
from mcpspec.run.relay_lines import relay_messages
from mcpspec.run.revisions import claimed, header_mismatch

MAX_HEAD = 64 * 1024
ENDPOINT_PATH = "/mcp"
STREAM_BACKLOG = 1024  # messages a GET stream's client may fall behind by before the stream is cut
ANSWER_SECONDS = 3600.0  # the longest a request waits for the relay's answer (call_timeout ends calls sooner)


class ListenError(Exception):
    """--listen names no loopback address and port."""


def loopback(text: str) -> tuple[str, int]:
    """``127.0.0.1:PORT`` or ``[::1]:PORT`` as (address, port); ListenError for anything not loopback."""
    match = re.fullmatch(r"\[?([0-9a-fA-F:.]+)\]?:([0-9]{1,5})", text)
    try:
        address = ipaddress.ip_address(match.group(1)) if match else None
    except ValueError:
        address = None
    if match is None or address is None or not address.is_loopback or int(match.group(2)) > 65535:
        raise ListenError(f"--listen {text!r}: give a loopback address and port (127.0.0.1:8931, [::1]:8931; port 0 picks one)")
    return str(address), int(match.group(2))


class LocalEndpoint:
    """Serves the relay's client side on a loopback address; ``open`` gives the relay its streams."""

    def __init__(self, address: str, port: int, token: str | None = None) -> None:
        self.address, self.port = address, port
        self.token = token or secrets.token_urlsafe(32)
        self.session_id: str | None = None
        self.waiters: dict[Any, asyncio.Future[bytes]] = {}
        self.streams: dict[asyncio.Queue[bytes | None], asyncio.StreamWriter] = {}
        self.ended = False

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        ours, theirs = socket.socketpair()
        self.reader, self.writer = await asyncio.open_connection(sock=ours, limit=2**16)
        relay_in, relay_out = await asyncio.open_connection(sock=theirs, limit=2**16)
        self.server = await asyncio.start_server(self.handle, self.address, self.port, limit=2**16)
        self.port = self.server.sockets[0].getsockname()[1]
        self.router = asyncio.create_task(self.route())
        return relay_in, relay_out

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}{ENDPOINT_PATH}"

    def close(self) -> None:
        self.server.close()
        self.router.cancel()
        for queue in list(self.streams):
            self.push(queue, None)

    # --- relay to client ---

    async def route(self) -> None:
        async for message, item in relay_messages(self.reader, STREAM_CAP):
            key = _key(message.get("id")) if "method" not in message else None
            waiter = self.waiters.pop(key, None) if key is not None else None
            if waiter is not None and not waiter.done():
                waiter.set_result(item)
            else:
                for queue in list(self.streams):
                    self.push(queue, item)
        for waiter in self.waiters.values():
            if not waiter.done():
                waiter.set_exception(ConnectionError("the session ended"))

    # --- HTTP ---

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self.serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(30):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        headers = _headers(lines[1:])
        if len(parts) != 3 or len(head) > MAX_HEAD or headers is None:
            await _reply(writer, 400)
            return
        method, target = parts[0], parts[1]
        refusal = self.refusal(target, headers)
        if refusal is not None:
            await _reply(writer, refusal)
            return
        if method == "POST":
            await self.post(reader, writer, headers)
        elif method == "GET":
            await self.stream(writer)
        elif method == "DELETE":
            await _reply(writer, 204)
            self.end()
        else:
            await _reply(writer, 405, extra=[("Allow", "GET, POST, DELETE")])

    def refusal(self, target: str, headers: dict[str, str]) -> int | None:
        """The status that refuses a request, or None when it may pass."""
        given = headers.get("authorization", "")
        expected = f"Bearer {self.token}"
        if not hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode()):
            return 401
        host = f"[{self.address}]" if ":" in self.address else self.address
        if headers.get("host") != f"{host}:{self.port}" or "origin" in headers:
            return 403
        if target != ENDPOINT_PATH:
            return 404
        session = headers.get("mcp-session-id")
        if self.session_id is not None and session is None:
            return 400
        if self.session_id is not None and session is not None and not hmac.compare_digest(session.encode("utf-8", "replace"), self.session_id.encode()):
            return 404
        return None

    async def post(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: dict[str, str]) -> None:
        try:
            length = int(headers.get("content-length", ""))
        except ValueError:
            await _reply(writer, 411)
            return
        if length > PARSE_CAP or length < 0 or "transfer-encoding" in headers:
            await _reply(writer, 413)
            return
        body = await reader.readexactly(length)
        try:
            message = parse_line(body)  # as strictly as a stdio line: no duplicate key a proxy in front reads otherwise
        except FramingError:
            message = None
        if not isinstance(message, dict) or self.ended:
            await _reply(writer, 400)
            return
        method = message.get("method")
        routed = "mcp-method" in headers or "mcp-name" in headers  # headers a proxy may have routed by, whatever the body claims
        if isinstance(method, str) and (routed or claimed(method, message.get("params"))[0] == "modern"):
            mismatch = header_mismatch(headers, method, message.get("params"))
            if mismatch is not None:  # 2026-07-28: the headers a proxy routes by must say what the body does
                error = {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": mismatch.code, "message": mismatch.message}}
                await _reply(writer, 400, json.dumps(error).encode(), "application/json")
                return
        initialize = method == "initialize"
        if initialize and self.session_id is not None:
            await _reply(writer, 409)  # one session per run
            return
        key = _key(message.get("id")) if "method" in message else None
        if key is None:
            self.writer.write(dump(message))
            await self.writer.drain()
            await _reply(writer, 202)
            return
        if key in self.waiters:
            await _reply(writer, 409)
            return
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.waiters[key] = waiter
        self.writer.write(dump(message))
        await self.writer.drain()
        try:
            answer = await asyncio.wait_for(waiter, ANSWER_SECONDS)
        finally:
            self.waiters.pop(key, None)
        extra = []
        if initialize:
            self.session_id = secrets.token_hex(16)
            extra.append(("Mcp-Session-Id", self.session_id))
        await _reply(writer, 200, answer.rstrip(b"\n"), "application/json", extra)

    async def stream(self, writer: asyncio.StreamWriter) -> None:
        if self.session_id is None:
            await _reply(writer, 400)
            return
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=STREAM_BACKLOG)
        self.streams[queue] = writer
        try:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
            await writer.drain()
            while (item := await queue.get()) is not None:
                writer.write(b"event: message\ndata: " + item.rstrip(b"\n") + b"\n\n")
                await writer.drain()
        finally:
            self.streams.pop(queue, None)

    def push(self, queue: asyncio.Queue[bytes | None], item: bytes | None) -> None:
        """Queue ``item`` on a GET stream; a stream whose client reads too slowly is cut (it may reopen
        one), never buffered without bound: a server's flood of notifications must not fill memory."""
        try:
            queue.put_nowait(item)
        except asyncio.QueueFull:
            writer = self.streams.pop(queue, None)
            if writer is not None:
                writer.transport.abort()

    def end(self) -> None:
        """The client ended the session: the relay sees the end of its input."""
        self.ended = True
        self.writer.close()


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Headers this endpoint judges a request by: one of each, or a proxy before it may have read another.
SINGLE = frozenset({"host", "authorization", "origin", "content-length", "transfer-encoding", "mcp-session-id", "mcp-method", "mcp-name", "mcp-protocol-version"})


def _headers(lines: list[str]) -> dict[str, str] | None:
    """The request's headers by lower-case name; None when a name is malformed (whitespace before the
    colon, a folded line) or one of ``SINGLE`` comes twice."""
    headers: dict[str, str] = {}
    for line in lines:
        if not line:
            continue
        name, colon, value = line.partition(":")
        key = name.lower()
        if not colon or not _TOKEN.fullmatch(name) or (key in SINGLE and key in headers):
            return None
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return headers


def _key(value: Any) -> Any:
    return ("n", value) if isinstance(value, int) and not isinstance(value, bool) else ("s", value) if isinstance(value, str) else None


async def _reply(writer: asyncio.StreamWriter, status: int, body: bytes = b"", media: str = "text/plain", extra: list[tuple[str, str]] | None = None) -> None:
    reasons = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
               405: "Method Not Allowed", 409: "Conflict", 411: "Length Required", 413: "Content Too Large"}  # fmt: skip
    head = f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: {media}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    if status == 401:
        head += 'WWW-Authenticate: Bearer realm="mcpspec run"\r\n'
    head += "".join(f"{name}: {value}\r\n" for name, value in extra or [])
    writer.write(head.encode("ascii") + b"\r\n" + body)
    await writer.drain()
