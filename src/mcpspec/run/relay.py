"""The MCP relay of `mcpspec run`: between the client (our stdio) and the sandboxed server (its pipes).

Fail closed at every step: each message is parsed strictly and re-serialized (the server never sees
the client's bytes, so no parser differential reaches it), ids are renumbered toward the server (a
duplicate or reused client id cannot confuse it, a late reply matches nothing), only known methods
pass, batches are refused, and a server's own requests are answered here, never relayed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    DiscoverResult,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    ListToolsResult,
    TextContent,
)
from pydantic import ValidationError

from mcpspec.run.carriers import ANSWER_KEYS, Refused, carried_request, checked_result, request_params
from mcpspec.run.framing import (
    STREAM_CAP,
    FramingError,
    LineReader,
    Oversized,
    ResultScanner,
    dump,
    parse_line,
    stream_head,
)
from mcpspec.run.limits import CallLimiter
from mcpspec.run.lockfile import Kind, digest
from mcpspec.run.policy import Hidden, ToolPolicy
from mcpspec.run.revisions import RELAY_INFO, SERVER_INFO_KEY, UNSUPPORTED_PROTOCOL_VERSION, Refusal, Revisions, screened_params

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
URL_ELICITATION_REQUIRED = -32042  # 2025-11-25: the error's data names URLs the client should open

CLIENT_REQUESTS = frozenset(
    {
        "initialize", "server/discover", "ping", "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
        "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
    }
)  # fmt: skip
CLIENT_NOTIFICATIONS = frozenset({"notifications/initialized", "notifications/cancelled", "notifications/progress"})
SERVER_NOTIFICATIONS = frozenset(
    {
        "notifications/message", "notifications/progress", "notifications/tools/list_changed", "notifications/resources/list_changed",
        "notifications/resources/updated", "notifications/prompts/list_changed",
    }
)  # fmt: skip

# What the relay passes of an initialize answer (the rest, ``_meta`` among it, is dropped), and which
# server capabilities (those it relays; experimental, extensions and tasks are not).
INITIALIZE_KEYS = frozenset({"protocolVersion", "capabilities", "serverInfo", "instructions"})
SERVER_CAPABILITIES = ("logging", "prompts", "resources", "tools", "completions")
NAMING = frozenset({"prompts/get", "resources/read", "resources/subscribe", "completion/complete"})  # judged by what listings hide
PROMPT_LISTS: tuple[tuple[str, Kind], ...] = (("prompts/list", "prompts"),)
RESOURCE_LISTS: tuple[tuple[str, Kind], ...] = (("resources/list", "resources"), ("resources/templates/list", "resource_templates"))
LISTS: dict[str, Kind] = {"prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resource_templates"}
LIST_KEYS: dict[Kind, str] = {"tools": "tools", "prompts": "prompts", "resources": "resources", "resource_templates": "resourceTemplates"}

RequestId = int | str
# Calls awaiting a decision (listing, limits, approval) hold their arguments: so many, so large at most.
MAX_JUDGING, MAX_JUDGING_BYTES = 64, 16 * 1024 * 1024
MAX_PAGES = 100  # pages of tools/list the relay reads to check the tools against the lock
MAX_REJUDGED = 8  # verdicts on a request naming a prompt or resource made stale by list_changed before it is refused


class PinRefused(Exception):
    """What the server sent differs from mcp-sandbox.lock: the request is refused."""


class Audit(Protocol):
    """Where the relay records what matters (the guard's AuditLog)."""

    def write(self, event: str, **fields: Any) -> None: ...


@dataclass(frozen=True)
class Verdict:
    """An approver's decision on one call."""

    allowed: bool
    approver: str
    reason: str
    condition: str | None = None  # the argument rule that decided or sent the call to the approver


# Decides a call that needs approval: (tool, arguments) -> Verdict, or None when the call needs none.
Gate = Callable[[str, Mapping[str, Any] | None], Awaitable[Verdict | None]]


class Pipe:
    """One direction of the relay: whole lines written under a lock (a streamed line is never interleaved)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.lock = asyncio.Lock()
        self.broken = False

    async def send(self, data: bytes) -> None:
        async with self.lock:
            await self.raw(data)

    async def raw(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, RuntimeError):
            self.broken = True

    def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()


@dataclass
class Pending:
    """A request sent to the server and not yet answered."""

    client_id: RequestId | None  # None: the relay's own request
    method: str
    started: float
    tool: str | None = None
    first_page: bool = True
    timer: asyncio.Task[None] | None = None
    timeout: float | None = None  # the call's call_timeout; it bounds a streamed result too
    deadline: float | None = None  # loop time the call_timeout ends
    waiter: asyncio.Future[dict[str, Any]] | None = None
    decision: dict[str, Any] = field(default_factory=dict)
    epoch: int = 0  # the policy's epoch when it was sent (a call: when its verdict was taken)


def _valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53) or (isinstance(value, str) and len(value) <= 256)


def _wire(model: JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError) -> bytes:
    data = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(model, JSONRPCError) and model.id is None:
        data["id"] = None
    return dump(data)


def _call_result(text: str) -> dict[str, Any]:
    result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    return result.model_dump(by_alias=True, exclude_none=True, exclude_unset=True, mode="json")


LISTING_TIMEOUT = 60.0  # seconds the relay waits for a page of its own tools/list


class Relay:
    """Relays one session; ``run`` returns when the client or the server has gone."""

    def __init__(
        self,
        policy: ToolPolicy,
        limiter: CallLimiter,
        audit: Audit,
        gate: Gate | None,
        client_in: asyncio.StreamReader,
        client_out: asyncio.StreamWriter,
        server_in: asyncio.StreamWriter,
        server_out: asyncio.StreamReader,
        clean: Callable[[str], str] = str,
    ) -> None:
        self.policy = policy
        self.clean = clean  # makes a message fit for stderr (masked, no control character): it may quote the server
        self.sandbox = policy.sandbox
        self.limiter = limiter
        self.audit = audit
        self.gate = gate
        self.client_in = client_in
        self.server_out = server_out
        self.client = Pipe(client_out)
        self.server = Pipe(server_in)
        self.ids = itertools.count(1)
        self.pending: dict[int, Pending] = {}
        self.in_flight: set[RequestId] = set()  # client ids of requests not yet answered
        self.by_client: dict[RequestId, int] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.judging: dict[RequestId, asyncio.Task[None]] = {}  # calls not yet sent on (listing, limits, approval)
        self.judging_bytes = 0  # the size of their lines
        self.listing = asyncio.Lock()
        self.revisions = Revisions(policy.sandbox.protocol_revisions)
        self.server_ended = False
        self.client_ended = False
        self.grace = 10.0  # seconds the server has to end once the client has gone

    # --- the session ---

    async def run(self) -> None:
        client = asyncio.create_task(self.from_client())
        server = asyncio.create_task(self.from_server())
        done, _ = await asyncio.wait({client, server}, return_when=asyncio.FIRST_COMPLETED)
        if client in done:
            self.client_ended = True
            self.server.close()  # end of input: the server ends as over any stdio session
            finished, _ = await asyncio.wait({server}, timeout=self.grace)
            if not finished:  # the session stops it (the launcher tears the sandbox down)
                server.cancel()
                await asyncio.gather(server, return_exceptions=True)
        else:
            client.cancel()
            await asyncio.gather(client, return_exceptions=True)
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for task in (client, server):
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    def spawn(self, job: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(job)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def note(self, text: str) -> None:
        sys.stderr.write(f"mcpspec run: {self.sandbox.name}: {self.clean(text)}\n")
        sys.stderr.flush()

    # --- client to server ---

    async def from_client(self) -> None:
        reader = LineReader(self.client_in)
        while (item := await reader.next()) is not None:
            if isinstance(item, Oversized):
                await reader.skip()
                self.audit.write("message_refused", direction="client", reason="larger than the relay parses")
                await self.client_error(None, INVALID_REQUEST, "refused by mcpspec run: a message from the client is larger than 4 MiB")
            elif item.strip():
                await self.client_message(item)

    def held(self, size: int) -> Callable[[asyncio.Task[None]], None]:
        self.judging_bytes += size

        def release(_: asyncio.Task[None]) -> None:
            self.judging_bytes -= size

        return release

    async def client_error(self, client_id: RequestId | None, code: int, message: str, data: Any = None) -> None:
        await self.client.send(_wire(JSONRPCError(jsonrpc="2.0", id=client_id, error=ErrorData(code=code, message=message, data=data))))

    def call_result(self, text: str) -> dict[str, Any]:
        """A tools/call result the relay answers itself (an error), as the session's revision spells it."""
        return self.revisions.stamped(_call_result(text))

    async def ask_server(self, method: str, params: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """A request of the relay's own; its result, or ValueError / TimeoutError."""
        pending = Pending(None, method, time.monotonic())
        pending.waiter = asyncio.get_running_loop().create_future()
        server_id = await self.forward(pending, params)
        try:
            return await asyncio.wait_for(pending.waiter, timeout)
        except TimeoutError:
            self.settle(server_id)  # a late answer then matches nothing (its waiter is cancelled)
            raise

    async def probe_server(self) -> Refusal | None:
        """Before the first 2026-07-28 request goes on: whether the server speaks 2026-07-28 (it answers
        server/discover), else the handshake, to which the client's requests are then translated."""
        version = self.revisions.modern_version
        try:
            found = DiscoverResult.model_validate(await self.ask_server("server/discover", {"_meta": self.revisions.envelope()}))
            if version in found.supported_versions:
                self.revisions.server_era = "modern"
                return None
        except (TimeoutError, ValueError):
            pass  # no 2026-07-28 here: try the handshake
        offered = self.revisions.handshake_revision()
        if offered is None:
            return Refusal(UNSUPPORTED_PROTOCOL_VERSION, f"refused by mcpspec run: the server does not speak {version} and the spec allows no 2025 revision to translate to")
        hello = {"protocolVersion": offered, "capabilities": {}, "clientInfo": RELAY_INFO}
        try:
            answer = self.screen_initialize(checked_result("initialize", await self.ask_server("initialize", hello)))
        except PinRefused as exc:
            return Refusal(INTERNAL_ERROR, f"refused by policy: {exc}")
        except (TimeoutError, ValueError):
            return Refusal(UNSUPPORTED_PROTOCOL_VERSION, "refused by mcpspec run: the server answers neither server/discover nor initialize")
        wrong = self.revisions.settled(answer.get("protocolVersion"))
        if wrong is not None:
            return wrong
        await self.server.send(_wire(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")))
        self.revisions.translated(answer)
        self.audit.write("protocol_translated", client=version, server=str(answer.get("protocolVersion")))
        return None

    async def refuse_revision(self, client_id: RequestId, method: str, refusal: Refusal) -> None:
        self.audit.write("message_refused", direction="client", reason="protocol revision", method=method, code=refusal.code)
        await self.client_error(client_id, refusal.code, refusal.message, refusal.data)

    async def client_message(self, line: bytes) -> None:
        try:
            message = parse_line(line)
        except FramingError as exc:
            self.audit.write("message_refused", direction="client", reason=str(exc))
            await self.client_error(None, PARSE_ERROR, f"refused by mcpspec run: {exc}")
            return
        if isinstance(message, list):
            self.audit.write("message_refused", direction="client", reason="batch")
            await self.client_error(None, INVALID_REQUEST, "refused by mcpspec run: JSON-RPC batches are not relayed")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await self.client_error(None, INVALID_REQUEST, "refused by mcpspec run: not a JSON-RPC 2.0 message")
            return
        if "method" not in message:
            self.audit.write("message_refused", direction="client", reason="a response to no request of the relay's")
            return
        if "id" in message:
            await self.client_request(message, len(line))
        else:
            await self.client_notification(message)

    async def client_request(self, message: dict[str, Any], size: int) -> None:
        client_id = message["id"]
        if not _valid_id(client_id):
            await self.client_error(None, INVALID_REQUEST, "refused by mcpspec run: a request id is an integer or a short string")
            return
        try:
            request = JSONRPCRequest.model_validate(message)
        except ValidationError:
            await self.client_error(client_id, INVALID_REQUEST, "refused by mcpspec run: not a valid request")
            return
        if client_id in self.in_flight:
            # Answer with a null id: the request already using this id keeps its own answer.
            self.audit.write("message_refused", direction="client", reason="duplicate id", method=request.method)
            await self.client_error(None, INVALID_REQUEST, f"refused by mcpspec run: id {client_id!r} is already in use by a request in flight")
            return
        if request.method not in CLIENT_REQUESTS:
            self.audit.write("message_refused", direction="client", reason="method not relayed", method=request.method[:100])
            await self.client_error(client_id, METHOD_NOT_FOUND, f"refused by mcpspec run: method {request.method[:100]!r} is not relayed")
            return
        params = message.get("params")
        answers = sorted(ANSWER_KEYS & params.keys()) if isinstance(params, dict) else []
        if answers:  # answers to a server's request for input: the relay never showed the client one
            self.audit.write("message_refused", direction="client", reason=f"params carry {answers[0]}", method=request.method)
            await self.client_error(client_id, INVALID_PARAMS, f"refused by mcpspec run: {answers[0]} answers a server's request for input, which is never relayed")
            return
        judged_apart = request.method == "tools/call" or request.method in NAMING
        if judged_apart and (len(self.judging) >= MAX_JUDGING or self.judging_bytes + size > MAX_JUDGING_BYTES):
            self.audit.write("message_refused", direction="client", reason="too many calls awaiting a decision", method=request.method)
            text = f"refused by mcpspec run: too many calls awaiting a decision (at most {MAX_JUDGING}, {MAX_JUDGING_BYTES // 2**20} MiB)"
            if request.method != "tools/call":
                await self.client_error(client_id, INTERNAL_ERROR, text)
                return
            await self.client.send(_wire(JSONRPCResponse(jsonrpc="2.0", id=client_id, result=self.call_result(text))))
            return
        params, wrong = self.revisions.judge(request.method, params)
        if wrong is None and self.revisions.must_probe(request.method, params):
            wrong = await self.probe_server()
        if wrong is not None:
            await self.refuse_revision(client_id, request.method, wrong)
            return
        if request.method == "server/discover" and self.revisions.server_era == "handshake":  # translated: answered here
            self.revisions.discovered()
            result = self.revisions.screen_result(request.method, self.revisions.local_discover())
            await self.client.send(_wire(JSONRPCResponse(jsonrpc="2.0", id=client_id, result=result)))
            return
        self.in_flight.add(client_id)
        if judged_apart:  # the relay may list first (or ask an approver): the client's other messages go on meanwhile
            judge = self.call(client_id, params) if request.method == "tools/call" else self.named(client_id, request.method, params)
            self.judging[client_id] = task = self.spawn(judge)
            task.add_done_callback(self.held(size))
        else:
            pending = Pending(client_id, request.method, time.monotonic())
            pending.first_page = not (isinstance(params, dict) and params.get("cursor") is not None)
            await self.forward(pending, params)

    async def named(self, client_id: RequestId, method: str, params: Any) -> None:
        """A request naming a prompt or a resource: sent on, or refused (JSON-RPC error, audited). Sent only
        if the relay has read no prompts or resources list_changed since its verdict (else judged again)."""
        try:
            for _ in range(MAX_REJUDGED):
                epoch = self.policy.items_epoch
                refusal = await self.naming_refusal(method, params)
                if refusal is not None:
                    break
                async with self.server.lock:
                    if epoch == self.policy.items_epoch:
                        self.judged(client_id)  # from now on a cancellation goes to the server, as for any request in flight
                        pending = Pending(client_id, method, time.monotonic())
                        await self.server.raw(self.request_line(self.register(pending, None), pending, params))
                        return
            else:
                refusal = f"the server said its lists changed {MAX_REJUDGED} times while the request was judged"
        finally:
            self.judged(client_id)
        self.in_flight.discard(client_id)
        self.audit.write("message_refused", direction="client", reason=refusal, method=method)
        await self.client_error(client_id, INVALID_PARAMS, f"refused by policy: {refusal}")

    async def naming_refusal(self, method: str, params: Any) -> str | None:
        """Why a request naming a resource (or, completing, a prompt) is refused: what a listing hides is
        refused by name too (run/uris.py); None when it may go on."""
        if not isinstance(params, dict):
            return f"{method} names what it reads in object params"
        ref = params.get("ref") if method == "completion/complete" else {**params, "type": "ref/prompt" if method == "prompts/get" else "ref/resource"}
        kind = ref.get("type") if isinstance(ref, dict) else None
        if isinstance(ref, dict) and kind == "ref/prompt" and isinstance(ref.get("name"), str):
            failure = await self.list_items_myself(PROMPT_LISTS)
            return failure or self.policy.item_refusal("prompts", ref["name"])
        if not isinstance(ref, dict) or kind != "ref/resource" or not isinstance(ref.get("uri"), str):
            return f"{method} names a prompt by a string name, or a resource by a string uri" + (" in its ref" if method == "completion/complete" else "")
        if self.policy.lock is None and self.policy.poison is None:
            return None
        failure = await self.list_items_myself(RESOURCE_LISTS)
        return failure or self.policy.resource_refusal(ref["uri"], reference=method == "completion/complete")

    async def list_items_myself(self, lists: tuple[tuple[str, Kind], ...]) -> str | None:
        """List the server's prompts, or resources and templates (every page), unless a whole listing since its
        last list_changed is known, so a request can be judged by what listings hide; why it could not be."""
        if self.policy.lock is None and self.policy.poison is None:
            return None
        async with self.listing:
            for method, kind in lists:
                if kind in self.policy.known_items:
                    continue
                cursor: Any = None
                for _ in range(MAX_PAGES):
                    try:
                        result = await self.ask_server(method, {"cursor": cursor} if cursor is not None else {}, LISTING_TIMEOUT)
                    except ValueError:  # an error answer: the server lists none of this kind, nothing of it is shown
                        break
                    except TimeoutError:
                        return f"the server did not answer its {method} in time, so the request cannot be judged"
                    try:
                        self.screen_items(kind, checked_result(method, result))
                    except (Refused, ValueError) as exc:  # as an error answer: nothing of this kind is shown (with a lock, nothing may be read)
                        self.audit.write("message_refused", direction="server", reason=f"not a {method} result: {exc}"[:300], method=method)
                        break
                    cursor = result.get("nextCursor")
                    if cursor is None:
                        break
                else:
                    return f"the server's {method} has more than {MAX_PAGES} pages, so the request cannot be judged"
                self.policy.known_items.add(kind)
        return None

    async def forward(self, pending: Pending, params: Any) -> int:
        server_id = self.register(pending, None)
        await self.server.send(self.request_line(server_id, pending, params))
        return server_id

    def register(self, pending: Pending, timeout: float | None) -> int:
        """Book a request about to be sent: its server id, its timer."""
        server_id = next(self.ids)
        self.pending[server_id] = pending
        pending.epoch = self.policy.epoch
        if pending.client_id is not None:
            self.by_client[pending.client_id] = server_id
        if timeout is not None:
            pending.timeout, pending.deadline = timeout, asyncio.get_running_loop().time() + timeout
            pending.timer = asyncio.create_task(self.expire(server_id, timeout))
        return server_id

    def request_line(self, server_id: int, pending: Pending, params: Any) -> bytes:
        """The request as the server's revision takes it (the client's, or the relay's own)."""
        params = self.revisions.to_server(params) if pending.client_id is not None else self.revisions.own_params(params)
        params = request_params(pending.method, params)
        return _wire(JSONRPCRequest(jsonrpc="2.0", id=server_id, method=pending.method, params=params))

    def settle(self, server_id: int) -> Pending | None:
        """Take a request off the books (answered, timed out or failed)."""
        pending = self.pending.pop(server_id, None)
        if pending is None:
            return None
        if pending.timer is not None and pending.timer is not asyncio.current_task():
            pending.timer.cancel()
        if pending.client_id is not None:
            self.in_flight.discard(pending.client_id)
            self.by_client.pop(pending.client_id, None)
        return pending

    async def client_notification(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method not in CLIENT_NOTIFICATIONS:
            # tools/call without an id included: it could never get an answer, and it never runs.
            self.audit.write("message_refused", direction="client", reason="notification not relayed", method=str(method)[:100])
            return
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            self.audit.write("message_refused", direction="client", reason="params not an object", method=str(method))
            return
        if method == "notifications/cancelled":
            request_id = params.get("requestId") if isinstance(params, dict) else None
            judged = self.judging.pop(request_id, None) if _valid_id(request_id) else None  # type: ignore[arg-type]
            if judged is not None:  # cancelled before it was sent on: it never reaches the server
                judged.cancel()
                self.in_flight.discard(request_id)
                self.audit.write("call_cancelled", request="before it was sent to the server")
                return
            server_id = self.by_client.get(request_id) if _valid_id(request_id) else None  # type: ignore[arg-type]
            pending = self.settle(server_id) if server_id is not None else None
            if pending is None:
                return
            if pending.method == "tools/call":  # the client gave up on it: any reply is dropped, its id is free again
                self.audit_call(pending.decision, pending.started, "cancelled", 0)
            assert server_id is not None
            params = {**params, "requestId": server_id}  # type: ignore[dict-item]
        params = screened_params(params, modern=self.revisions.server_era == "modern")
        await self.server.send(_wire(JSONRPCNotification(jsonrpc="2.0", method=str(method), params=params)))

    # --- tools/call ---

    async def call(self, client_id: RequestId, params: Any) -> None:
        try:
            pending = await self.judge(client_id, params)
            # The server said its tools changed after the verdict (while the call waited for the pipe): judge the pins again.
            while pending is not None and not await self.send_call(pending, params):
                pending = await self.judge_pins(pending)
        finally:
            self.judged(client_id)

    def judged(self, client_id: RequestId) -> None:
        """From now on a cancellation goes to the server, as for any call in flight."""
        # Only our own entry: a cancelled call's id may already belong to a newer call being judged.
        if self.judging.get(client_id) is asyncio.current_task():
            del self.judging[client_id]

    async def send_call(self, pending: Pending, params: Any) -> bool:
        """Send a judged call on; False (unsent) when the relay has read a list_changed since its verdict."""
        async with self.server.lock:
            if pending.epoch != self.policy.epoch:
                return False
            assert pending.client_id is not None
            self.judged(pending.client_id)
            server_id = self.register(pending, pending.timeout)
            await self.server.raw(self.request_line(server_id, pending, params))
        return True

    async def judge_pins(self, pending: Pending) -> Pending | None:
        """The judged call again, its pins checked anew; None when they now refuse it (answered here)."""
        assert pending.client_id is not None and pending.tool is not None
        refusal = await self.pin_refusal(pending)
        if refusal is None:
            return pending
        await self.refuse_pin(pending.client_id, pending.decision, pending.started, pending.tool, refusal)
        return None

    async def pin_refusal(self, verdict: Pending) -> Hidden | None:
        """Why the allowlist or the pins refuse ``verdict.tool`` now, listing the server's tools first when
        their verdicts are stale (never listed, or the server said they changed); the verdict's epoch is noted."""
        assert verdict.tool is not None
        if self.policy.needs_listing:
            await self.list_tools_myself()
        verdict.epoch = self.policy.epoch
        return self.policy.refusal(verdict.tool)

    async def judge(self, client_id: RequestId, params: Any) -> Pending | None:
        """The call to send on, or None when it was answered here (refused, denied, malformed)."""
        started = time.monotonic()
        try:
            parsed = CallToolRequestParams.model_validate(params)
        except ValidationError:
            self.in_flight.discard(client_id)
            await self.client_error(client_id, INVALID_PARAMS, "refused by mcpspec run: tools/call needs a tool name and object arguments")
            return None
        tool = parsed.name
        record: dict[str, Any] = {"tool": tool, "effects": list(self.sandbox.tools[tool].effects) if tool in self.sandbox.tools else []}
        if "arguments_hash" in self.sandbox.logging.record:
            record["arguments_sha256"] = digest(parsed.arguments or {})
        pending = Pending(client_id, "tools/call", started, tool=tool, decision=record)
        refusal = await self.pin_refusal(pending)
        if refusal is None:
            over = self.limiter.admit(tool)
            if over is not None:
                await self.refuse(client_id, record, started, f"refused by policy: {over}", "rate_limited")
                return None
            if self.gate is not None:
                verdict = await self.gate(tool, parsed.arguments)
                if verdict is not None:
                    record.update(decision="allowed" if verdict.allowed else "denied", approver=verdict.approver)
                    record.update({"condition": verdict.condition} if verdict.condition else {})
                    if not verdict.allowed:
                        await self.refuse(client_id, record, started, f"denied by policy: {verdict.reason}", "denied")
                        return None
                    # The server may have said its tools changed while the approver thought: check again.
                    refusal = await self.pin_refusal(pending)
        if refusal is not None:
            await self.refuse_pin(client_id, record, started, tool, refusal)
            return None
        record.setdefault("decision", "allowed")
        pending.timeout = self.limiter.timeout(tool)
        return pending

    async def refuse_pin(self, client_id: RequestId, record: dict[str, Any], started: float, tool: str, refusal: Hidden) -> None:
        self.report_hidden(refusal, on_call=True)
        record.pop("decision", None)
        await self.refuse(client_id, record, started, f"refused by policy: the tool {tool!r} is not allowed ({refusal.detail})", refusal.reason)

    async def refuse(self, client_id: RequestId, record: dict[str, Any], started: float, text: str, status: str) -> None:
        self.in_flight.discard(client_id)
        record.setdefault("decision", "refused")
        self.audit_call(record, started, status, 0, reason=text)
        await self.client.send(_wire(JSONRPCResponse(jsonrpc="2.0", id=client_id, result=self.call_result(text))))

    def audit_call(self, record: dict[str, Any], started: float, status: str, size: int, **extra: Any) -> None:
        duration = round(time.monotonic() - started, 3)
        self.audit.write("call", **record, status=status, duration_s=duration, result_bytes=size, **extra)

    async def expire(self, server_id: int, timeout: float) -> None:
        await asyncio.sleep(timeout)
        pending = self.settle(server_id)
        if pending is None or pending.client_id is None:
            return
        text = f"refused by policy: the call of {pending.tool!r} passed its call_timeout of {timeout:g}s and was cancelled"
        self.audit_call(pending.decision, pending.started, "timeout", 0)
        await self.client.send(_wire(JSONRPCResponse(jsonrpc="2.0", id=pending.client_id, result=self.call_result(text))))
        self.cancel_at_server(server_id)

    def cancel_at_server(self, server_id: int) -> None:
        """Tell the server a call timed out, without waiting: a server that stopped reading must not hold the relay."""
        cancel = JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": server_id, "reason": "call timeout"})
        self.spawn(self.server.send(_wire(cancel)))

    def report_hidden(self, hidden: Hidden, on_call: bool) -> None:  # on_call: refused, not only hidden from a listing
        if hidden.reason in ("new", "changed", "poisoned"):
            (self.policy.refused_poisoned if hidden.reason == "poisoned" else self.policy.refused_pins).add(hidden.label)
            self.note(f"refused {hidden.kind} {hidden.name!r}: {hidden.detail}")
        rules = {"rules": list(hidden.rules), "findings": list(hidden.evidence)} if hidden.rules else {}
        if hidden.kind == "tool":
            self.audit.write("tool_refused" if on_call else "tool_hidden", tool=hidden.name, reason=hidden.reason, detail=hidden.detail, **rules)
        else:
            self.audit.write("pin_refused", item=hidden.label, reason=hidden.reason, detail=hidden.detail, **rules)

    # --- what else the lock pins ---

    def screen_initialize(self, result: dict[str, Any]) -> dict[str, Any]:
        """The initialize answer the client may see: only what it needs and what the lock pins (the
        server's ``_meta`` and capabilities the relay does not relay are dropped); PinRefused when the
        lock pins other instructions or serverInfo."""
        self.check_hello(result, "initialize")
        result = self.without_poisoned_instructions(result)
        return {key: value for key, value in {**result, "capabilities": _relayed_capabilities(result)}.items() if key in INITIALIZE_KEYS}

    def screen_discover(self, result: dict[str, Any]) -> dict[str, Any]:
        """The 2026-07-28 server/discover answer, screened as the initialize answer is: the lock's pin of
        serverInfo (in its ``_meta``) and instructions, and only the capabilities the relay relays."""
        meta = result.get("_meta")
        info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
        view = {
            "protocolVersion": "2026-07-28", "capabilities": {}, "serverInfo": info if isinstance(info, dict) else {"name": "", "version": ""},
            **({"instructions": result["instructions"]} if isinstance(result.get("instructions"), str) else {}),
        }  # fmt: skip
        self.check_hello(view, "server/discover")
        result = self.without_poisoned_instructions(result)
        return {**result, "capabilities": _relayed_capabilities(result)}

    def check_hello(self, result: dict[str, Any], method: str) -> None:
        """PinRefused when the lock pins other instructions or serverInfo than ``result`` (an initialize answer) has."""
        lock = self.policy.lock
        if lock is None:
            return
        changed = lock.check_initialize(self.sandbox.name, result)
        if changed is None or changed:
            detail = "it is not in mcp-sandbox.lock" if changed is None else f"its {', '.join(changed)} differ from mcp-sandbox.lock"
            self.report_hidden(Hidden("initialize", "changed", detail, "answer to"), on_call=True)
            raise PinRefused(f"the server's {method} answer is refused: {detail}")

    def without_poisoned_instructions(self, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` without ``instructions`` that have a blocking tool-poisoning finding (the session goes on)."""
        result, poisoned = self.policy.screen_initialize(result)
        if poisoned is not None:
            self.report_hidden(poisoned, on_call=False)
        return result

    def screen_items(self, kind: Kind, result: dict[str, Any]) -> dict[str, Any]:
        """A prompts, resources or resource templates listing without what the lock does not pin."""
        key = LIST_KEYS[kind]
        shown, hidden = self.policy.screen_items(kind, list(result.get(key) or []))
        for item in hidden:
            self.report_hidden(item, on_call=False)
        return {**result, key: shown}

    # --- tools/list ---

    def screen_listing(self, result: dict[str, Any], first_page: bool, epoch: int) -> dict[str, Any]:
        """The listing the client may see (its verdicts learnt unless asked for before the last list_changed);
        raises ValidationError when it is not a tools/list result."""
        listing = ListToolsResult.model_validate(result)
        raw_tools = result.get("tools")
        assert isinstance(raw_tools, list)
        names = [tool.name for tool in listing.tools]
        twice = {name for name in names if names.count(name) > 1}
        shown, hidden = self.policy.screen(tool for tool in listing.tools if tool.name not in twice)
        hidden += [Hidden(name, "changed", "the server offers two tools of this name") for name in sorted(twice)]
        self.policy.learn(shown, hidden, first_page, listing.next_cursor is None, epoch)
        for item in hidden:
            self.report_hidden(item, on_call=False)
        keep = {id(tool) for tool in shown}
        kept = [raw for raw, tool in zip(raw_tools, listing.tools, strict=True) if id(tool) in keep]
        self.audit.write("tools_listed", offered=len(names), shown=[t.name for t in shown], hidden=[h.name for h in hidden])
        return {**result, "tools": kept}

    async def list_tools_myself(self) -> None:
        """List the server's tools (every page) so a call can be judged against the lock."""
        async with self.listing:
            cursor: str | None = None
            first, epoch = True, self.policy.epoch
            for _ in range(MAX_PAGES):
                if not self.policy.needs_listing:
                    return
                if epoch != self.policy.epoch:  # the server said its tools changed mid-listing: from the first page again
                    cursor, first, epoch = None, True, self.policy.epoch
                pending = Pending(None, "tools/list", time.monotonic(), first_page=first)
                pending.waiter = asyncio.get_running_loop().create_future()
                server_id = await self.forward(pending, {"cursor": cursor} if cursor else None)
                try:
                    result = await asyncio.wait_for(pending.waiter, LISTING_TIMEOUT)
                    # Learnt only if no list_changed was read since it was asked for (even after its answer).
                    self.screen_listing(result, first, pending.epoch)
                except (TimeoutError, ValidationError, ValueError) as exc:
                    self.settle(server_id)  # a late answer then matches nothing
                    self.note(f"cannot list the server's tools to check them against the lock: {exc or 'no answer in time'}")
                    self.policy.learn([], [], first, True, pending.epoch)  # what was not offered is refused
                    return
                cursor = result.get("nextCursor")
                first = False
            if not self.policy.needs_listing:
                return
            self.note(f"the server's tools/list has more than {MAX_PAGES} pages (or changed as often): its tools cannot be checked against the lock")
            self.policy.learn([], [], first, True, epoch)

    # --- server to client ---

    async def from_server(self) -> None:
        reader = LineReader(self.server_out)
        try:
            while (item := await reader.next()) is not None:
                if isinstance(item, Oversized):
                    await self.stream(item, reader)
                elif item.strip():
                    await self.server_message(item)
        finally:
            self.server_ended = True
            for server_id in list(self.pending):
                pending = self.settle(server_id)
                if pending is not None and pending.waiter is not None and not pending.waiter.done():
                    pending.waiter.set_exception(ValueError("the server ended"))
                elif pending is not None and not self.client.broken:
                    await self.client_error(pending.client_id, INTERNAL_ERROR, "the server ended before it answered")

    async def server_message(self, line: bytes) -> None:
        try:
            message = parse_line(line)
        except FramingError as exc:
            self.note(f"dropped a line from the server: {exc}")
            return
        if not isinstance(message, dict):
            self.audit.write("message_refused", direction="server", reason="a batch or a non-object")
            self.note("dropped a batch or non-object from the server")
            await self.refuse_answers_in(message)
            return
        if "method" in message:
            await self.server_initiated(message)
            return
        server_id = message.get("id")
        pending = self.settle(server_id) if isinstance(server_id, int) and not isinstance(server_id, bool) else None
        if pending is None:
            self.audit.write("message_refused", direction="server", reason="a reply to no request in flight")
            return
        if pending.waiter is not None:
            if pending.waiter.done():  # its asker gave up waiting (timed out): a late answer is dropped
                return
            if isinstance(message.get("result"), dict):
                pending.waiter.set_result(message["result"])
            else:
                pending.waiter.set_exception(ValueError("the server answered tools/list with an error"))
            return
        await self.answer(pending, message)

    async def refuse_answers_in(self, dropped: Any) -> None:
        """A request whose answer came inside a dropped batch is answered with an error at once, so the
        client is not left waiting for its timeout."""
        for item in dropped if isinstance(dropped, list) else ():
            server_id = item.get("id") if isinstance(item, dict) and "method" not in item else None
            if not isinstance(server_id, int) or isinstance(server_id, bool) or server_id not in self.pending:
                continue
            pending = self.settle(server_id)
            if pending is None:
                continue
            if pending.waiter is not None:
                if not pending.waiter.done():
                    pending.waiter.set_exception(ValueError("the server answered in a batch"))
                continue
            if pending.method == "tools/call":
                self.audit_call(pending.decision, pending.started, "refused", 0, reason="answered in a JSON-RPC batch")
            if pending.client_id is not None:
                await self.client_error(pending.client_id, INTERNAL_ERROR, "refused by mcpspec run: the server answered in a JSON-RPC batch, which is not relayed")

    async def answer(self, pending: Pending, message: dict[str, Any]) -> None:
        client_id = pending.client_id
        assert client_id is not None
        result = message.get("result")
        error = message.get("error")
        if "result" in message and "error" in message:
            result, error = None, None  # neither is believed
        if "result" not in message or not isinstance(result, dict):
            await self.pass_error(pending, error)
            return
        try:
            result = checked_result(pending.method, result)
            if pending.method == "tools/list":
                result = self.screen_listing(result, pending.first_page, pending.epoch)
            elif pending.method == "initialize":
                result = self.screen_initialize(result)
                wrong = self.revisions.settled(result.get("protocolVersion"))
                if wrong is not None:
                    await self.refuse_revision(client_id, pending.method, wrong)
                    return
            elif pending.method == "server/discover":
                result = self.screen_discover(result)
                self.revisions.discovered()
            elif pending.method in LISTS:
                result = self.screen_items(LISTS[pending.method], result)
        except PinRefused as exc:
            await self.client_error(client_id, INTERNAL_ERROR, f"refused by policy: {exc}")
            return
        except Refused as exc:  # the server asked the client for something: the client gets an error instead
            self.audit.write("message_refused", direction="server", reason=str(exc), method=pending.method)
            self.note(f"refused the server's {pending.method} result: {exc}")
            if pending.method == "tools/call":
                self.audit_call(pending.decision, pending.started, "refused", 0, reason=str(exc))
            await self.client_error(client_id, INTERNAL_ERROR, f"refused by mcpspec run: {exc}; the request was not completed")
            return
        except ValueError:  # a pydantic ValidationError too
            self.audit.write("message_refused", direction="server", reason=f"not a {pending.method} result", method=pending.method)
            if pending.method == "tools/call":
                self.audit_call(pending.decision, pending.started, "malformed", 0)
                result = self.call_result("refused by mcpspec run: the server's reply is not a tools/call result")
            else:
                await self.client_error(client_id, INTERNAL_ERROR, f"refused by mcpspec run: the server's reply is not a {pending.method} result")
                return
        else:
            if pending.method == "tools/call":
                self.audit_call(pending.decision, pending.started, "error" if result.get("isError") else "ok", len(json.dumps(result)))
        result = self.revisions.screen_result(pending.method, result)
        await self.client.send(_wire(JSONRPCResponse(jsonrpc="2.0", id=client_id, result=result)))

    async def pass_error(self, pending: Pending, error: Any) -> None:
        """A server's error, as its code and message only: its ``data`` may carry anything (URLs to open
        for an elicitation, -32042, among others), so it never reaches the client."""
        assert pending.client_id is not None
        try:
            data = ErrorData.model_validate(error)
        except ValidationError:
            data = ErrorData(code=INTERNAL_ERROR, message="the server sent a malformed reply")
        if data.data is not None or data.code == URL_ELICITATION_REQUIRED:
            self.audit.write("message_refused", direction="server", reason="error data not relayed", method=pending.method, code=data.code)
        if data.code == URL_ELICITATION_REQUIRED:
            data = ErrorData(code=INTERNAL_ERROR, message="refused by mcpspec run: the server asked the client to open a URL (elicitation)")
        if pending.method == "tools/call":
            self.audit_call(pending.decision, pending.started, "error", 0)
        await self.client.send(_wire(JSONRPCError(jsonrpc="2.0", id=pending.client_id, error=ErrorData(code=data.code, message=data.message))))

    async def server_initiated(self, message: dict[str, Any]) -> None:
        method = str(message.get("method"))[:100]
        if "id" not in message:
            if method not in SERVER_NOTIFICATIONS:
                self.audit.write("message_refused", direction="server", reason="notification not relayed", method=method)
                return
            params = message.get("params")
            carried = carried_request(params)
            if carried is not None:
                self.audit.write("message_refused", direction="server", reason=f"the notification asks the client for input ({carried})", method=method)
                self.note(f"refused the server's {method}: it asks the client for input ({carried})")
                return
            if method == "notifications/tools/list_changed":
                self.policy.forget()
            elif method == "notifications/prompts/list_changed":
                self.policy.forget_items("prompts")
            elif method == "notifications/resources/list_changed":
                self.policy.forget_items("resources")
                self.policy.forget_items("resource_templates")
            await self.client.send(_wire(JSONRPCNotification(jsonrpc="2.0", method=method, params=params if isinstance(params, dict) else None)))
            return
        request_id = message["id"]
        if not _valid_id(request_id):
            return
        if method == "ping":
            await self.server.send(_wire(JSONRPCResponse(jsonrpc="2.0", id=request_id, result={})))
            return
        # sampling, elicitation, roots (and anything else): the server would reach the model, the user or the host's paths.
        self.audit.write("message_refused", direction="server", reason="server request not relayed", method=method)
        self.note(f"refused the server's request {method!r}: a server may ask the client nothing")
        reply = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=METHOD_NOT_FOUND, message=f"refused by mcpspec run: {method!r} is not relayed"))
        await self.server.send(_wire(reply))

    # --- a call result larger than the parse cap ---

    async def stream(self, head: Oversized, reader: LineReader) -> None:
        found = stream_head(head.prefix)
        server_id = found[0] if found is not None else None
        pending = self.pending.get(server_id) if isinstance(server_id, int) else None
        if found is None or pending is None or pending.method != "tools/call" or pending.client_id is None:
            await reader.skip()
            self.note("dropped an oversized line from the server that is not the result of a call in flight")
            if pending is not None and isinstance(server_id, int):
                self.settle(server_id)
                if pending.client_id is not None:
                    await self.client_error(pending.client_id, INTERNAL_ERROR, "refused by mcpspec run: the server's reply is too large")
            return
        assert isinstance(server_id, int)
        self.settle(server_id)
        client_id = pending.client_id
        scanner = ResultScanner()
        failure: str | None = None
        timed_out = False
        async with self.client.lock:
            await self.client.raw(b'{"jsonrpc":"2.0","id":' + json.dumps(client_id).encode() + b',"result":')
            try:
                async with asyncio.timeout_at(pending.deadline):  # a server that stalls mid-line keeps to call_timeout
                    async for piece in _chain(head.prefix[found[1] :], reader.rest()):
                        scanner.feed(piece)
                        if scanner.size > STREAM_CAP:
                            raise FramingError(f"the result is larger than {STREAM_CAP // 2**20} MiB")
                        await self.client.raw(piece)
                    scanner.finish()
            except FramingError as exc:
                failure = str(exc)
            except TimeoutError:
                failure, timed_out = f"it passed its call_timeout of {pending.timeout:g}s", True
            await self.client.raw(b"\n")  # a cut line is not JSON: the client discards it
        if failure is None:
            self.audit_call(pending.decision, pending.started, "ok", scanner.size)
            return
        self.note(f"cut the result of a call of {pending.tool!r}: {failure}")
        self.audit_call(pending.decision, pending.started, "timeout" if timed_out else "cut", scanner.size, reason=failure)
        if timed_out:
            text = f"refused by policy: the call of {pending.tool!r} passed its call_timeout of {pending.timeout:g}s and was cancelled"
        else:
            text = f"refused by mcpspec run: the server's result was cut: {failure}"
        await self.client.send(_wire(JSONRPCResponse(jsonrpc="2.0", id=client_id, result=self.call_result(text))))
        if timed_out:
            self.cancel_at_server(server_id)
        await reader.skip()  # the rest of the line, however long the server takes: the client is answered


def _relayed_capabilities(result: dict[str, Any]) -> dict[str, Any]:
    """The server capabilities the relay relays (experimental, extensions and tasks are not)."""
    capabilities = result.get("capabilities") or {}
    return {key: capabilities[key] for key in SERVER_CAPABILITIES if key in capabilities}


async def _chain(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if first:
        yield first
    async for piece in rest:
        yield piece
