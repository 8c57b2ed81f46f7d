"""The server side of `mcpspec run` for a remote (``placement: external``) streamable HTTP server.

The relay talks to a server through a pair of streams: for a sandboxed server, the launcher's stdin
and stdout; for a remote one, one end of a socket pair whose other end this bridge reads. Each
line the relay writes (already checked and re-serialized by it) is POSTed to the server's URL; each
JSON-RPC message of the answer (a JSON body, or the events of an SSE stream) goes back to the relay
as one line, which the relay checks as it checks a sandboxed server's output. So every policy of
the relay (allowlist, pins, approvals, limits, refusal of server-initiated requests) holds unchanged.

The credential (the server's secret, sent as ``Authorization: Bearer``) is added here, on the way
out, and nowhere else: the relay, the client and the audit never hold it. Nothing of the client's
reaches an HTTP header. No redirect is followed; a response or an event larger than
``MESSAGE_CAP``, or an answer stream open longer than ``STREAM_SECONDS``, is cut and the request
answered with an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from mcpspec.run.framing import PARSE_CAP, FramingError, dump, parse_line
from mcpspec.run.http_wire import HttpError, Response, events, request
from mcpspec.run.relay import INTERNAL_ERROR, Audit
from mcpspec.run.relay_lines import relay_messages
from mcpspec.run.remote_address import Endpoint, RemoteRefused, Resolver

MESSAGE_CAP = 32 * 1024 * 1024  # one JSON body, or one event of a stream
STREAM_SECONDS = 600.0  # the longest an answer stream stays open
CLOSE_SECONDS = 5.0  # what ending the session at the server (DELETE) may take
LISTEN_REOPENS, LISTEN_PAUSE = 100, 1.0  # how often the server's own stream is opened again, and after what pause
_SESSION_ID = re.compile(r"[\x21-\x7e]{1,256}")
_VERSION = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class RemoteServer:
    """Forwards the relay's lines to a streamable HTTP MCP server; ``open`` gives the relay its streams."""

    def __init__(self, endpoint: Endpoint, credential: str | None, audit: Audit, note: Callable[[str], None], resolver: Resolver | None = None) -> None:
        self.endpoint = endpoint
        self.credential = credential
        self.audit = audit
        self.note = note
        self.resolver = resolver
        self.session_id: str | None = None
        self.version: str | None = None
        self.posts: set[asyncio.Task[None]] = set()
        self.write_lock = asyncio.Lock()
        self.stream_seconds = STREAM_SECONDS

    async def open(self) -> tuple[asyncio.StreamWriter, asyncio.StreamReader, asyncio.Task[None]]:
        """(what the relay writes to, what it reads from, the bridge's task)."""
        ours, theirs = socket.socketpair()
        self.reader, self.writer = await asyncio.open_connection(sock=ours, limit=2**16)
        relay_reader, relay_writer = await asyncio.open_connection(sock=theirs, limit=2**16)
        return relay_writer, relay_reader, asyncio.create_task(self.run())

    # --- relay to server ---

    async def run(self) -> None:
        try:
            async for message, _ in relay_messages(self.reader, PARSE_CAP):  # the relay writes no longer line to a server
                self.spawn(self.post(message))
        finally:
            for task in list(self.posts):
                task.cancel()
            await asyncio.gather(*self.posts, return_exceptions=True)
            await self.end_session()
            self.writer.close()

    def spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(job)
        self.posts.add(task)
        task.add_done_callback(self.posts.discard)

    def headers(self, accept: str = "application/json, text/event-stream") -> list[tuple[str, str]]:
        out = [("Accept", accept), ("User-Agent", "mcpspec-run")]
        if self.version is not None:
            out.append(("MCP-Protocol-Version", self.version))
        if self.session_id is not None:
            out.append(("Mcp-Session-Id", self.session_id))
        if self.credential is not None:
            out.append(("Authorization", f"Bearer {self.credential}"))
        return out

    async def post(self, message: dict[str, Any]) -> None:
        request_id = message.get("id") if "method" in message else None
        method = str(message.get("method", ""))
        headers = [*self.headers(), ("Content-Type", "application/json")]
        try:
            async with asyncio.timeout(self.stream_seconds):  # the answer's head, and then its body, within the limit
                response = await request(self.endpoint, "POST", headers, dump(message).rstrip(b"\n"), self.resolver)
                try:
                    await self.answer(response, request_id, method)
                finally:
                    response.close()
        except RemoteRefused as exc:
            await self.refuse(request_id, method, str(exc))
        except HttpError as exc:
            await self.refuse(request_id, method, f"the remote server's answer was cut: {exc}")
        except TimeoutError:  # before OSError, of which it is one
            await self.refuse(request_id, method, f"the remote server's answer took longer than {self.stream_seconds:g}s")
        except (ConnectionError, OSError) as exc:
            await self.fail(request_id, f"the remote server cannot be reached: {exc}")

    async def answer(self, response: Response, request_id: Any, method: str) -> None:
        if 300 <= response.status < 400:
            await self.refuse(request_id, method, f"the remote server redirected (HTTP {response.status} to {_origin(response.headers.get('location', ''))}); redirects are not followed")
            return
        if request_id is None:  # a notification or a response: 202 Accepted, or an error nobody waits for
            if method == "notifications/initialized" and response.status < 300:
                self.spawn(self.listen())
            return
        if response.status >= 400 or response.status < 200:
            why = "refused the credential" if response.status in (401, 403) else "answered with an error"
            await self.fail(request_id, f"the remote server {why} (HTTP {response.status})")
            return
        if method == "initialize":
            self.learn_session(response)
        if not await self.messages(response, request_id):
            await self.fail(request_id, "the remote server ended its answer without answering the request")

    async def messages(self, response: Response, request_id: Any) -> bool:
        """Pass each message of the answer on; whether the answer to ``request_id`` came."""
        if response.media_type == "application/json":
            return await self.deliver(await response.read(MESSAGE_CAP), request_id)
        if response.media_type != "text/event-stream":
            raise HttpError(f"a response of type {response.media_type[:60]!r}")
        async for data in events(response.body(2**62), MESSAGE_CAP):
            if await self.deliver(data, request_id):
                return True  # the stream has done its work: it is closed
        return False

    async def deliver(self, body: bytes, request_id: Any) -> bool:
        try:
            message = parse_line(body)  # as strictly as the relay parses a line: it sees what the server sent
        except FramingError as exc:
            self.note(f"dropped a message of the remote server: {exc}")
            return False
        answers = isinstance(message, dict) and "method" not in message and _same_id(message.get("id"), request_id)
        if answers and self.version is None:
            result = message.get("result")
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(version, str) and _VERSION.fullmatch(version):
                self.version = version
        async with self.write_lock:
            self.writer.write(dump(message))
            await self.writer.drain()
        return answers

    async def listen(self) -> None:
        """Read the server's own stream (GET): its notifications and requests go to the relay, which
        passes the notifications it relays and answers the requests itself. Reopened when it ends."""
        for _ in range(LISTEN_REOPENS):
            try:
                response = await request(self.endpoint, "GET", self.headers("text/event-stream"), b"", self.resolver)
            except RemoteRefused as exc:
                self.note(f"refused: {exc}")
                return
            except (HttpError, ConnectionError, OSError, TimeoutError):
                await asyncio.sleep(LISTEN_PAUSE)
                continue
            try:
                if response.status != 200 or response.media_type != "text/event-stream":
                    return  # 405: the server keeps no such stream (a redirect is not followed either)
                async for data in events(response.body(2**62), MESSAGE_CAP):
                    await self.deliver(data, None)
            except HttpError as exc:
                self.note(f"the remote server's stream was cut: {exc}")
            finally:
                response.close()
            await asyncio.sleep(LISTEN_PAUSE)

    def learn_session(self, response: Response) -> None:
        value = response.headers.get("mcp-session-id")
        if value is not None and _SESSION_ID.fullmatch(value):
            self.session_id = value
        elif value is not None:
            self.note("ignored a malformed Mcp-Session-Id from the remote server")

    async def refuse(self, request_id: Any, method: str, why: str) -> None:
        self.audit.write("remote_refused", reason=why, method=method[:100])
        self.note(f"refused: {why}")
        await self.fail(request_id, f"refused by mcpspec run: {why}")

    async def fail(self, request_id: Any, why: str) -> None:
        if request_id is None:
            return
        async with self.write_lock:
            self.writer.write(dump({"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": why}}))
            with contextlib.suppress(ConnectionError):
                await self.writer.drain()

    async def end_session(self) -> None:
        """DELETE the session at the server (best effort: it expires it anyway)."""
        if self.session_id is None:
            return
        with contextlib.suppress(HttpError, RemoteRefused, ConnectionError, OSError, TimeoutError):
            async with asyncio.timeout(CLOSE_SECONDS):
                response = await request(self.endpoint, "DELETE", self.headers("*/*"), b"", self.resolver)
                response.close()


def _same_id(a: Any, b: Any) -> bool:
    """JSON-RPC ids compare by type and value (``true`` is not 1)."""
    return b is not None and type(a) is type(b) and a == b


def _origin(location: str) -> str:
    """Where a redirect points, as scheme://host:port only (the server wrote it: no path, no control character)."""
    try:
        parts = urlsplit(location)
        text = f"{parts.scheme}://{parts.hostname}:{parts.port}" if parts.hostname else "a relative URL"
    except ValueError:
        text = "a malformed URL"
    return re.sub(r"[^\x21-\x7e]", "?", text)[:100]
