"""Stdio framing of MCP: one JSON-RPC message per line, read in chunks with a cap.

A line up to ``PARSE_CAP`` bytes is parsed strictly (UTF-8, JSON with no duplicate key and no
NaN). A longer line is never held whole: the relay streams it (a large `tools/call` result) or
discards it, and :class:`ResultScanner` checks the streamed bytes as they pass, in bounded memory.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

CHUNK = 64 * 1024
PARSE_CAP = 4 * 1024 * 1024  # the largest message the relay parses (tools/list results, small call results)
STREAM_CAP = 256 * 1024 * 1024  # the largest call result the relay streams through
MAX_DEPTH = 256


class FramingError(ValueError):
    """A line is not one well-formed JSON-RPC message the relay accepts."""


@dataclass(frozen=True)
class Oversized:
    """A line longer than the parse cap: its first ``prefix`` bytes; the rest is still to be read."""

    prefix: bytes


class LineReader:
    """Lines of a byte stream, each at most ``cap`` bytes in memory."""

    def __init__(self, reader: asyncio.StreamReader, cap: int = PARSE_CAP) -> None:
        self.reader = reader
        self.cap = cap
        self.buffer = bytearray()
        self.eof = False
        self.line_open = False  # an Oversized head was returned and its line has not ended

    async def _fill(self) -> None:
        chunk = await self.reader.read(CHUNK)
        if chunk:
            self.buffer += chunk
        else:
            self.eof = True

    async def next(self) -> bytes | Oversized | None:
        """The next line (without its newline), an Oversized head, or None at the end."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return line
            if len(self.buffer) > self.cap:
                prefix = bytes(self.buffer)
                self.buffer.clear()
                self.line_open = True
                return Oversized(prefix)
            if self.eof:
                if not self.buffer:
                    return None
                line = bytes(self.buffer)
                self.buffer.clear()
                return line
            await self._fill()

    async def rest(self) -> AsyncIterator[bytes]:
        """After an Oversized head: the remaining bytes of that line, chunk by chunk (not the newline)."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                piece = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                self.line_open = False
                if piece:
                    yield piece
                return
            if self.buffer:
                piece = bytes(self.buffer)
                self.buffer.clear()
                yield piece
            if self.eof:
                self.line_open = False
                return
            await self._fill()

    async def skip(self) -> None:
        """Discard what is left of an oversized line."""
        while self.line_open:
            async for _ in self.rest():
                pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FramingError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise FramingError(f"{name} is not JSON")


_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def parse_line(line: bytes) -> Any:
    """The JSON value of one line; FramingError when it is not strict UTF-8 JSON."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FramingError(f"not UTF-8 at byte {exc.start}") from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise FramingError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise FramingError("nested too deeply") from None
    if _SURROGATE.search(line):
        # A lone surrogate escape is no character: written on, it is bytes that are not UTF-8, which the
        # peer reads as something else than what an approver was shown.
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise FramingError("a \\u escape of a lone surrogate is not a character") from None
    return value


def dump(message: dict[str, Any]) -> bytes:
    """One message as a line (compact JSON, newline-terminated)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"


# The head a streamed response must start with: jsonrpc and id (either order), then "result" as the last key.
_ID = rb'(-?(?:0|[1-9][0-9]{0,17})|"[A-Za-z0-9._:-]{1,128}")'  # a JSON number: no leading zero
_HEAD = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*' + _ID + rb'|"id"\s*:\s*' + _ID + rb'\s*,\s*"jsonrpc"\s*:\s*"2\.0")'
    rb'\s*,\s*"result"\s*:\s*(?=\{)'
)


def stream_head(prefix: bytes) -> tuple[int | str, int] | None:
    """For the head of an oversized response: its id and where its result object starts; None otherwise."""
    match = _HEAD.match(prefix)
    if match is None:
        return None
    raw = match.group(1) or match.group(2)
    value: int | str = json.loads(raw)
    return value, match.end()


RESULT_KEYS = frozenset({b"content", b"structuredContent", b"isError", b"_meta", b"resultType"})
# Keys that carry a request for the client (MCP 2026-07-28 input_required results, and its tasks extension):
# refused at any depth of a streamed result, as :func:`mcpspec.run.carriers.carried_request` refuses them in a parsed one.
CARRIER_KEYS = frozenset({b"inputRequests", b"input_requests", b"requestState"})
_IN_STRING = re.compile(rb'["\\]')
_STRUCTURE = re.compile(rb'["{}\[\],:]')
_CLOSE = {ord("}"): ord("{"), ord("]"): ord("[")}
_KEY_CHARS = 64


class ResultScanner:
    """Checks a streamed `tools/call` result object (from its ``{`` to the message's closing brace).

    It checks what makes the line a call result, not a full JSON grammar: valid UTF-8, balanced
    brackets up to MAX_DEPTH, only CallToolResult keys (each once) at the result's top level, a
    ``resultType`` (if any) of ``"complete"``, no key that carries a request for the client at any
    depth, then nothing but the closing brace of the message. Memory: one chunk at a time.
    """

    def __init__(self) -> None:
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.stack = bytearray()
        self.in_string = False
        self.escape = False
        self.expect_key = False
        self.key: bytearray | None = None  # the key being read (its first bytes)
        self.keys: set[bytes] = set()
        self.want_type = False  # the value of the top-level resultType comes next
        self.type_value: bytearray | None = None
        self.closed = False  # the result object ended
        self.finished = False  # the message's closing brace was seen
        self.size = 0

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        try:
            self.decoder.decode(data)
        except UnicodeDecodeError:
            raise FramingError("the result is not UTF-8") from None
        position = 0
        while position < len(data):
            position = self._string(data, position) if self.in_string else self._structure(data, position)

    def _string(self, data: bytes, position: int) -> int:
        if self.escape:
            self.escape = False
            self._collect(data[position : position + 1])
            return position + 1
        match = _IN_STRING.search(data, position)
        if match is None:
            self._collect(data[position:])
            return len(data)
        self._collect(data[position : match.start()])
        if match.group() == b"\\":
            self.escape = True
            self._collect(b"\\")
        else:
            self.in_string = False
            self._end_string()
        return match.end()

    def _collect(self, piece: bytes) -> None:
        target = self.key if self.key is not None else self.type_value
        if target is not None and len(target) <= _KEY_CHARS:
            target += piece[: _KEY_CHARS + 1 - len(target)]

    def _end_string(self) -> None:
        if self.type_value is not None:
            value, self.type_value = bytes(self.type_value), None
            if value != b"complete":
                raise FramingError(f"the result's resultType is not 'complete': {value[:_KEY_CHARS].decode('utf-8', 'replace')!r}")
            return
        if self.key is None:
            return
        key, self.key = bytes(self.key), None
        if key in CARRIER_KEYS:
            raise FramingError(f"the result carries a request for the client ({key.decode()!r})")
        if len(self.stack) != 1:
            return
        if key not in RESULT_KEYS:
            raise FramingError(f"the result has a key a call result does not have: {key[:_KEY_CHARS].decode('utf-8', 'replace')!r}")
        if key in self.keys:
            raise FramingError("the result repeats a key")
        self.keys.add(key)
        self.want_type = key == b"resultType"

    def _structure(self, data: bytes, position: int) -> int:
        if self.closed:
            return self._tail(data, position)
        match = _STRUCTURE.search(data, position)
        if match is None:
            if self.want_type and data[position:].strip():
                raise FramingError("the result's resultType is not a string")
            return len(data)
        char = data[match.start()]
        if self.want_type and char != ord(":") and (char != ord('"') or data[position : match.start()].strip()):
            raise FramingError("the result's resultType is not a string")
        if char == ord('"'):
            self.in_string = True
            if self.want_type:
                self.want_type, self.type_value = False, bytearray()
            else:
                self.key = bytearray() if self.expect_key else None
            self.expect_key = False
        elif char in (ord("{"), ord("[")):
            self.stack.append(char)
            if len(self.stack) > MAX_DEPTH:
                raise FramingError("the result is nested too deeply")
            self.expect_key = char == ord("{")
        elif char in _CLOSE:
            if not self.stack or self.stack[-1] != _CLOSE[char]:
                raise FramingError("the result's brackets do not match")
            self.stack.pop()
            self.closed = not self.stack
            self.expect_key = False
        elif char == ord(","):
            self.expect_key = bool(self.stack) and self.stack[-1] == ord("{")
        else:  # ":"
            self.expect_key = False
        return match.end()

    def _tail(self, data: bytes, position: int) -> int:
        rest = data[position:].strip()
        if not rest:
            return len(data)
        if self.finished or rest[:1] != b"}" or rest[1:].strip():
            raise FramingError("the response goes on after its result")
        self.finished = True
        return len(data)

    def finish(self) -> None:
        """The line ended: raise unless it was one complete call result."""
        try:
            self.decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise FramingError("the result ends inside a UTF-8 sequence") from None
        if not self.finished:
            raise FramingError("the response ended before its result did")
