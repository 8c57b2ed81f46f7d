"""A small HTTP/1.1 client for the remote side of `mcpspec run`: one request per connection.

It follows no redirect, keeps no cookie, sends only the headers it is given, and reads a response
body (Content-Length, chunked, or up to the end of the connection) within a byte cap. Server-sent
events are split into their ``data`` within a per-event cap. Connections go through
``remote_address.connect``, which checks the address it connects to.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from mcpspec.run.remote_address import Endpoint, Resolver, connect

MAX_HEAD = 64 * 1024  # status line and headers
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VALUE = re.compile(r"[\t\x20-\x7e]*")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")  # int(..., 16) also takes "-1", "0x", "_" and spaces


class HttpError(Exception):
    """The response is not one the client reads (malformed, or larger than its cap)."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def body(self, cap: int) -> AsyncIterator[bytes]:
        """The decoded body in pieces; HttpError once more than ``cap`` bytes came."""
        size = 0
        async for piece in self._pieces():
            size += len(piece)
            if size > cap:
                raise HttpError(f"the response is larger than {cap} bytes")
            yield piece

    async def read(self, cap: int) -> bytes:
        return b"".join([piece async for piece in self.body(cap)])

    async def _pieces(self) -> AsyncIterator[bytes]:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                line = (await self._line()).split(b";", 1)[0].rstrip(b" \t")
                if not _CHUNK_SIZE.fullmatch(line):
                    raise HttpError("a malformed chunk size")
                size = int(line, 16)
                if size == 0:
                    while await self._line():  # trailers
                        pass
                    return
                left = size
                while left:
                    piece = await self.reader.read(min(left, 65536))
                    if not piece:
                        raise HttpError("the connection ended inside a chunk")
                    left -= len(piece)
                    yield piece
                await self._line()
        elif "content-length" in self.headers:
            try:
                left = int(self.headers["content-length"])
            except ValueError:
                raise HttpError("a malformed Content-Length") from None
            while left > 0:
                piece = await self.reader.read(min(left, 65536))
                if not piece:
                    raise HttpError("the connection ended before the body did")
                left -= len(piece)
                yield piece
        else:
            while piece := await self.reader.read(65536):
                yield piece

    async def _line(self) -> bytes:
        try:
            return (await self.reader.readuntil(b"\n")).rstrip(b"\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            raise HttpError("the connection ended or a line is too long") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


def _checked(name: str, value: str) -> str:
    if not _TOKEN.fullmatch(name) or not _VALUE.fullmatch(value):
        raise ValueError(f"header {name!r} has a character HTTP does not allow")
    return f"{name}: {value}\r\n"


async def request(endpoint: Endpoint, method: str, headers: Sequence[tuple[str, str]], body: bytes = b"", resolver: Resolver | None = None) -> Response:
    """Send one request on a fresh, checked connection and read the response head."""
    reader, writer = await connect(endpoint, resolver)
    try:
        head = f"{method} {endpoint.target} HTTP/1.1\r\n" + _checked("Host", endpoint.authority) + "Connection: close\r\n"
        head += "".join(_checked(name, value) for name, value in headers)
        if body or method == "POST":
            head += f"Content-Length: {len(body)}\r\n"
        writer.write(head.encode("ascii") + b"\r\n" + body)
        await writer.drain()
        raw = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError) as exc:
        writer.close()
        raise HttpError(f"no HTTP response: {type(exc).__name__}") from None
    except BaseException:
        writer.close()
        raise
    return _response(raw, reader, writer)


def _response(raw: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Response:
    lines = raw.decode("latin-1").split("\r\n")
    match = re.fullmatch(r"HTTP/1\.[01] ([1-5][0-9][0-9])(?: .*)?", lines[0])
    if match is None or len(raw) > MAX_HEAD:
        writer.close()
        raise HttpError("not an HTTP/1.1 response")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            writer.close()
            raise HttpError("a malformed response header")
        key = name.lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return Response(int(match.group(1)), headers, reader, writer)


async def events(pieces: AsyncIterator[bytes], cap: int) -> AsyncIterator[bytes]:
    """The ``data`` of each server-sent event of a body (events without data are skipped)."""
    buffer = b""
    data: list[bytes] = []
    size = 0
    async for piece in pieces:
        buffer += piece
        if len(buffer) > cap:
            raise HttpError(f"an event is larger than {cap} bytes")
        *lines, buffer = buffer.split(b"\n")  # a bare CR ending a line is not read as one
        for line in (raw.removesuffix(b"\r") for raw in lines):
            if not line:
                if data:
                    yield b"\n".join(data)
                data, size = [], 0
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
                size += len(value)
                if size > cap:
                    raise HttpError(f"an event is larger than {cap} bytes")
