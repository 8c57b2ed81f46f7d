"""One MCP endpoint in front of an agent's servers, each behind its own relay (`mcpspec run FILE --agent NAME`).

Each server keeps its own sandbox and its own Relay (policy, pins, approvals, limits, audit); the
relay's client side is an in-process socket whose other end is this endpoint. The endpoint merges
the handshake and the lists, routes each call to the server that owns the name (stripping the
prefix, see names.py), numbers its requests to each relay itself (so the client's ids never meet
another server's), passes cancellations and notifications on, and takes a server that ends out of
the lists (list_changed) while calls to its tools get errors.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcpspec import __version__
from mcpspec.run.framing import PARSE_CAP, STREAM_CAP, FramingError, LineReader, Oversized, dump, parse_line
from mcpspec.run.names import exposed
from mcpspec.run.relay import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, MAX_PAGES, METHOD_NOT_FOUND, PARSE_ERROR, Pipe, RequestId, _valid_id
from mcpspec.run.revisions import SERVER_INFO_KEY

CAPABILITIES = ("tools", "prompts", "resources")  # what the endpoint serves; logging and completions are not merged
LISTED: dict[str, str] = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}
BY_NAME = {"tools/call": "tools", "prompts/get": "prompts"}
BY_URI = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
CHANGED = {"tools": "notifications/tools/list_changed", "prompts": "notifications/prompts/list_changed", "resources": "notifications/resources/list_changed"}


class Gone(Exception):
    """The server ended: what was sent to it gets no answer."""


@dataclass
class Member:
    """One server behind the endpoint: the endpoint's end of its relay's client socket."""

    name: str
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    pipe: Pipe = field(init=False)
    live: bool = True
    offered: set[str] = field(default_factory=set)  # the kinds of list it answered with items

    def __post_init__(self) -> None:
        self.pipe = Pipe(self.writer)


# Writes an audit line to one server's audit log: (server, event, fields).
AuditTo = Callable[[str, str, Mapping[str, Any]], None]


def _no_audit(server: str, event: str, fields: Mapping[str, Any]) -> None:
    pass


class Endpoint:
    """Serves the client on ``client_in``/``client_out``; ``run`` returns when the client or every server has gone."""

    def __init__(
        self,
        agent: str,
        members: Sequence[Member],
        client_in: asyncio.StreamReader,
        client_out: asyncio.StreamWriter,
        note: Callable[[str], None],
        audit: AuditTo = _no_audit,
    ) -> None:
        self.agent = agent
        self.audit = audit
        self.members = {member.name: member for member in members}
        self.client_in = client_in
        self.client = Pipe(client_out)
        self.note = note
        self.ids = itertools.count(1)
        self.pending: dict[int, tuple[Member, asyncio.Future[dict[str, Any]]]] = {}
        self.requests: dict[RequestId, asyncio.Task[None]] = {}  # the client's requests not yet answered
        self.sent: dict[RequestId, tuple[Member, int]] = {}  # where each went, for a cancellation
        self.names: dict[str, dict[str, tuple[str, str]]] = {}  # kind -> shown name -> (server, real name): the client's view
        self.uris: dict[str, str] = {}  # resource URI -> the one server whose last listing named it
        self.ambiguous: dict[str, list[str]] = {}  # resource URI -> the servers that all list it: refused, never routed
        self.resources_known = False  # resources listed since the last resources list_changed: who owns a URI is known
        self.modern = True  # until the client sends initialize: 2026-07-28 results say their resultType
        self.client_ended = False
        self.all_gone = asyncio.Event()

    # --- the session ---

    async def run(self) -> None:
        readers = [asyncio.create_task(self.from_member(member)) for member in self.members.values()]
        client = asyncio.create_task(self.from_client())
        gone = asyncio.create_task(self.all_gone.wait())
        await asyncio.wait({client, gone}, return_when=asyncio.FIRST_COMPLETED)
        self.client_ended = client.done()
        for task in (client, gone):
            task.cancel()
        for member in self.members.values():  # end of input: each relay ends its server as over any stdio session
            if member.writer.can_write_eof() and not member.writer.is_closing():
                member.writer.write_eof()
        for task in list(self.requests.values()):
            task.cancel()
        await asyncio.gather(client, gone, *self.requests.values(), return_exceptions=True)
        await asyncio.gather(*readers, return_exceptions=True)

    # --- client to servers ---

    async def from_client(self) -> None:
        reader = LineReader(self.client_in, PARSE_CAP)
        while (item := await reader.next()) is not None:
            if isinstance(item, Oversized):
                await reader.skip()
                await self.error(None, INVALID_REQUEST, "refused by mcpspec run: a message from the client is larger than 4 MiB")
            elif item.strip():
                await self.client_message(item)

    async def error(self, client_id: RequestId | None, code: int, message: str) -> None:
        await self.client.send(dump({"jsonrpc": "2.0", "id": client_id, "error": {"code": code, "message": message}}))

    async def reply(self, client_id: RequestId, result: dict[str, Any]) -> None:
        await self.client.send(dump({"jsonrpc": "2.0", "id": client_id, "result": result}))

    def stamped(self, result: dict[str, Any]) -> dict[str, Any]:
        return {**result, "resultType": "complete"} if self.modern else result

    async def client_message(self, line: bytes) -> None:
        try:
            message = parse_line(line)
        except FramingError as exc:
            await self.error(None, PARSE_ERROR, f"refused by mcpspec run: {exc}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and "method" not in message and "id" in message:
                return  # a response: the endpoint asks the client nothing
            await self.error(None, INVALID_REQUEST, "refused by mcpspec run: not a JSON-RPC 2.0 request or notification (batches are not relayed)")
            return
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            await self.error(message.get("id") if _valid_id(message.get("id")) else None, INVALID_PARAMS, "refused by mcpspec run: params must be an object")
            return
        if "id" not in message:
            await self.client_notification(message["method"], params)
            return
        client_id = message["id"]
        if not _valid_id(client_id):
            await self.error(None, INVALID_REQUEST, "refused by mcpspec run: a request id is an integer or a short string")
            return
        if client_id in self.requests:
            await self.error(None, INVALID_REQUEST, f"refused by mcpspec run: id {client_id!r} is already in use by a request in flight")
            return
        if message["method"] == "initialize":
            self.modern = False
        task = asyncio.create_task(self.request(client_id, message["method"], params))
        self.requests[client_id] = task
        task.add_done_callback(lambda _: (self.requests.pop(client_id, None), self.sent.pop(client_id, None)))

    async def client_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            for member in self.live():
                await member.pipe.send(dump({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}))
        elif method == "notifications/cancelled" and params is not None:
            request_id = params.get("requestId")
            where = self.sent.pop(request_id, None) if _valid_id(request_id) else None  # type: ignore[arg-type]
            task = self.requests.get(request_id) if _valid_id(request_id) else None  # type: ignore[arg-type]
            if where is not None:
                member, own_id = where
                await member.pipe.send(dump({"jsonrpc": "2.0", "method": method, "params": {**params, "requestId": own_id}}))
            if task is not None:
                task.cancel()  # the client gave up on it: no answer goes back

    async def request(self, client_id: RequestId, method: str, params: dict[str, Any] | None) -> None:
        try:
            if method == "ping":
                await self.reply(client_id, self.stamped({}))
            elif method in ("initialize", "server/discover"):
                await self.hello(client_id, method, params)
            elif method in LISTED:
                await self.listing(client_id, method, params)
            elif method in BY_NAME or method in BY_URI:
                await self.routed(client_id, method, params or {})
            else:
                await self.error(client_id, METHOD_NOT_FOUND, f"refused by mcpspec run: {method[:100]!r} is not served by an agent endpoint")
        except Gone as exc:
            await self.error(client_id, INTERNAL_ERROR, f"refused by mcpspec run: server {exc} ended before it answered")
        except (KeyError, TypeError, ValueError) as exc:  # a reply of a shape no relay writes: the client is answered all the same
            self.note(f"could not answer the client's {method[:100]}: {exc!r}")
            await self.error(client_id, INTERNAL_ERROR, f"refused by mcpspec run: the agent's servers gave no usable answer to {method[:100]!r}")

    async def ask(self, member: Member, method: str, params: dict[str, Any] | None, client_id: RequestId | None = None) -> dict[str, Any]:
        """Send a request to one relay; its reply (result or error), or Gone."""
        if not member.live:
            raise Gone(member.name)
        own_id = next(self.ids)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[own_id] = (member, waiter)
        if client_id is not None:
            self.sent[client_id] = (member, own_id)
        try:
            await member.pipe.send(dump({"jsonrpc": "2.0", "id": own_id, "method": method, **({"params": params} if params is not None else {})}))
            return await waiter
        finally:
            self.pending.pop(own_id, None)

    def live(self) -> list[Member]:
        return [member for member in self.members.values() if member.live]

    async def everyone(self, method: str, params: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
        """Each live server's reply to the same request, by server (those that ended are left out)."""
        members = self.live()
        replies = await asyncio.gather(*(self.ask(member, method, params) for member in members), return_exceptions=True)
        found: dict[str, dict[str, Any]] = {}
        for member, reply in zip(members, replies, strict=True):
            if isinstance(reply, Gone):
                continue
            if isinstance(reply, BaseException):
                raise reply
            found[member.name] = reply
        return found

    async def hello(self, client_id: RequestId, method: str, params: dict[str, Any] | None) -> None:
        replies = await self.everyone(method, params)
        failed = [(name, reply.get("error")) for name, reply in replies.items() if not isinstance(reply.get("result"), dict)]
        if failed or not replies:
            name, error = failed[0] if failed else ("", {})
            code = error["code"] if isinstance(error, dict) and isinstance(error.get("code"), int) else INTERNAL_ERROR
            text = error.get("message") if isinstance(error, dict) and isinstance(error.get("message"), str) else "a malformed reply"
            await self.error(client_id, code, f"{name}: {text}" if failed else "refused by mcpspec run: every server of the agent has ended")
            return
        results = {name: reply["result"] for name, reply in replies.items()}
        merged = merged_hello(self.agent, method, results)
        if isinstance(merged, str):
            await self.error(client_id, INTERNAL_ERROR, f"refused by mcpspec run: {merged}")
            return
        await self.reply(client_id, merged)

    async def listing(self, client_id: RequestId, method: str, params: dict[str, Any] | None) -> None:
        if params is not None and params.get("cursor") is not None:
            await self.error(client_id, INVALID_PARAMS, "refused by mcpspec run: an agent endpoint answers every list in one page (no cursor)")
            return
        found = await self.list_all(method, params)
        if isinstance(found, dict) and "error" in found:
            await self.client.send(dump({"jsonrpc": "2.0", "id": client_id, "error": found["error"]}))
            return
        await self.reply(client_id, found)

    async def list_all(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Every page of ``method`` from every live server, merged into one result (or the only error when none answered)."""
        key = LISTED[method]
        members = self.live()
        pages = await asyncio.gather(*(self.pages(member, method, params) for member in members), return_exceptions=True)
        items: dict[str, list[dict[str, Any]]] = {}
        base: dict[str, Any] | None = None
        first_error: dict[str, Any] | None = None
        for member, got in zip(members, pages, strict=True):
            if isinstance(got, BaseException):
                if isinstance(got, Gone):
                    continue
                raise got
            result, error = got
            if result is None:
                first_error = first_error or error
                continue
            base = base or result
            items[member.name] = result.get(key) or []
            if items[member.name]:
                member.offered.add(CHANGED_KIND.get(key, key))
        if base is None:
            return {"error": first_error or {"code": INTERNAL_ERROR, "message": "refused by mcpspec run: every server of the agent has ended"}}
        merged = {name: value for name, value in base.items() if name != "nextCursor"}
        merged[key] = self.merged_items(key, items)
        return merged

    async def pages(self, member: Member, method: str, params: dict[str, Any] | None) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        key = LISTED[method]
        collected: list[Any] = []
        cursor: Any = None
        result: dict[str, Any] = {}
        for _ in range(MAX_PAGES):
            reply = await self.ask(member, method, {**(params or {}), **({"cursor": cursor} if cursor is not None else {})} or None)
            if not isinstance(reply.get("result"), dict):
                error = reply.get("error")
                return None, error if isinstance(error, dict) else {"code": INTERNAL_ERROR, "message": "a malformed reply"}
            result = reply["result"]
            page = result.get(key)
            collected += page if isinstance(page, list) else []
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        else:
            self.note(f"{member.name}: its {method} has more than {MAX_PAGES} pages: the rest is left out")
        return {**result, key: collected}, {}

    def merged_items(self, key: str, items: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        if key in ("tools", "prompts"):
            offers = {server: [str(item.get("name")) for item in listed if isinstance(item, dict)] for server, listed in items.items()}
            shown, left_out = exposed(offers)
            for name in left_out:
                self.note(f"left out {name!r}: another server offers a {key[:-1]} of that very name (rule TS011)")
            self.names[key] = shown
            by_real = {(server, real): name for name, (server, real) in shown.items()}
            return [
                {**item, "name": by_real[(server, str(item.get("name")))]}
                for server, listed in items.items() for item in listed
                if isinstance(item, dict) and (server, str(item.get("name"))) in by_real
            ]  # fmt: skip
        if key != "resources":
            return [item for listed in items.values() for item in listed]
        owners: dict[str, list[str]] = {}
        for server, listed in items.items():
            for item in listed:
                uri = item.get("uri") if isinstance(item, dict) else None
                if isinstance(uri, str) and server not in owners.setdefault(uri, []):
                    owners[uri].append(server)
        self.resources_known = True
        self.uris = {uri: servers[0] for uri, servers in owners.items() if len(servers) == 1}
        self.ambiguous = {uri: servers for uri, servers in owners.items() if len(servers) > 1}
        for uri, servers in self.ambiguous.items():
            self.note(f"left out resource {uri[:200]!r}: {', '.join(servers)} all list it (a read of it is refused)")
            for server in servers:
                self.audit(server, "pin_refused", {"item": f"resource {uri}", "reason": "ambiguous", "detail": f"servers {', '.join(servers)} of the agent all list it"})
        return [item for listed in items.values() for item in listed if not (isinstance(item, dict) and item.get("uri") in self.ambiguous)]

    async def routed(self, client_id: RequestId, method: str, params: dict[str, Any]) -> None:
        owner = await self.owner(method, params)
        if isinstance(owner, str):
            if method == "tools/call":
                await self.reply(client_id, self.stamped({"content": [{"type": "text", "text": owner}], "isError": True}))
            else:
                await self.error(client_id, INVALID_PARAMS, owner)
            return
        member, sent = owner
        try:
            reply = await self.ask(member, method, sent, client_id)
        except Gone:
            text = f"refused by mcpspec run: server {member.name!r} has ended; its tools are gone"
            if method == "tools/call":
                await self.reply(client_id, self.stamped({"content": [{"type": "text", "text": text}], "isError": True}))
            else:
                await self.error(client_id, INTERNAL_ERROR, text)
            return
        await self.client.send(dump({**reply, "id": client_id}))

    async def owner(self, method: str, params: dict[str, Any]) -> tuple[Member, dict[str, Any]] | str:
        """The server a request goes to and the params it gets (the real name), or why it goes nowhere."""
        if method in BY_NAME:
            kind, name = BY_NAME[method], params.get("name")
            if kind not in self.names:  # the client has not listed: list as it would have
                await self.list_all(f"{kind}/list", {"_meta": params["_meta"]} if isinstance(params.get("_meta"), dict) else None)
            found = self.names.get(kind, {}).get(name) if isinstance(name, str) else None
            if found is None:
                return f"refused by mcpspec run: no server of agent {self.agent!r} offers a {kind[:-1]} named {str(name)[:100]!r}"
            return self.members[found[0]], {**params, "name": found[1]}
        if not self.resources_known:  # the client has not listed them: list as it would have (who lists a URI decides)
            meta = {"_meta": params["_meta"]} if isinstance(params.get("_meta"), dict) else None
            for listing in ("resources/list", "resources/templates/list"):
                await self.list_all(listing, meta)
        uri = params.get("uri")
        if isinstance(uri, str) and uri in self.ambiguous:
            servers = self.ambiguous[uri]
            for name in servers:
                self.audit(name, "message_refused", {"direction": "client", "method": method, "reason": f"resource {uri[:200]!r} is listed by servers {', '.join(servers)}"})
            return f"refused by policy: resource {uri[:200]!r} is listed by several servers of agent {self.agent!r} ({', '.join(servers)}): which one would answer is ambiguous"
        server = self.uris.get(uri) if isinstance(uri, str) else None
        if server is None:
            holders = [member for member in self.live() if "resources" in member.offered or "resourceTemplates" in member.offered]
            if len(holders) != 1:
                return f"refused by mcpspec run: no one server of agent {self.agent!r} lists resource {str(uri)[:200]!r}"
            return holders[0], params
        return self.members[server], params

    # --- servers to client ---

    async def from_member(self, member: Member) -> None:
        reader = LineReader(member.reader, STREAM_CAP + PARSE_CAP)
        try:
            while (item := await reader.next()) is not None:
                if isinstance(item, Oversized):
                    await reader.skip()
                    continue
                try:
                    message = parse_line(item) if item.strip() else None
                except FramingError:
                    continue  # a result its relay cut: the relay answers the call with an error next
                if isinstance(message, dict):
                    await self.member_message(member, message)
        finally:
            await self.ended(member)

    async def member_message(self, member: Member, message: dict[str, Any]) -> None:
        if "method" not in message:
            own_id = message.get("id")
            waiting = self.pending.get(own_id) if isinstance(own_id, int) else None
            if waiting is not None and waiting[0] is member and not waiting[1].done():
                waiting[1].set_result(message)
            return
        if "id" in message:
            return  # a relay answers its server's requests itself; it sends none
        method, params = str(message["method"]), message.get("params")
        if method == CHANGED["resources"]:
            self.resources_known = False
        if method == "notifications/message" and isinstance(params, dict):
            params = {**params, "logger": f"{member.name}/{params.get('logger', '')}".rstrip("/")}
        await self.client.send(dump({"jsonrpc": "2.0", "method": method, **({"params": params} if isinstance(params, dict) else {})}))

    async def ended(self, member: Member) -> None:
        """A server has gone: what waits on it is answered, its lists are changed for the client."""
        member.live = False
        for own_id, (owner, waiter) in list(self.pending.items()):
            if owner is member and not waiter.done():
                waiter.set_exception(Gone(member.name))
                self.pending.pop(own_id, None)
        self.uris = {uri: server for uri, server in self.uris.items() if server != member.name}
        # An ambiguous URI stays refused until the next listing: the client was never shown it.
        if not self.live():
            self.all_gone.set()
            return
        if self.client_ended:
            return
        self.note(f"{member.name}: the server ended; its tools are taken out of the agent's lists")
        for kind in sorted(member.offered & set(CHANGED)):
            await self.client.send(dump({"jsonrpc": "2.0", "method": CHANGED[kind]}))


CHANGED_KIND = {"resourceTemplates": "resources"}


def merged_hello(agent: str, method: str, results: Mapping[str, dict[str, Any]]) -> dict[str, Any] | str:
    """One initialize (or server/discover) answer for the agent's servers, or why there cannot be one."""
    capabilities: dict[str, Any] = {}
    for result in results.values():
        offered = result.get("capabilities")
        for kind in CAPABILITIES:
            if isinstance(offered, dict) and isinstance(offered.get(kind), dict):
                capabilities[kind] = {"listChanged": True}  # the endpoint says so when a server ends
                if kind == "resources" and offered[kind].get("subscribe") is True:
                    capabilities[kind]["subscribe"] = True
    info = {"name": f"mcpspec-agent-{agent}", "version": __version__}
    told = [f"[{name}] {result['instructions']}" for name, result in results.items() if isinstance(result.get("instructions"), str) and result["instructions"]]
    instructions = {"instructions": "\n\n".join(told)} if told else {}
    first = next(iter(results.values()))
    if method == "initialize":
        versions = {name: result.get("protocolVersion") for name, result in results.items()}
        if len(set(map(json.dumps, versions.values()))) > 1:
            said = ", ".join(f"{name}: {version}" for name, version in versions.items())
            return f"the agent's servers settled on different protocol revisions ({said}); give them a common one in protocol_revisions"
        return {"protocolVersion": first.get("protocolVersion"), "capabilities": capabilities, "serverInfo": info, **instructions}
    supported = [version for version in first.get("supportedVersions") or [] if all(version in (r.get("supportedVersions") or []) for r in results.values())]
    if not supported:
        return "the agent's servers have no protocol revision in common"
    merged = {key: value for key, value in first.items() if key not in ("instructions", "capabilities", "supportedVersions", "_meta")}
    meta = first.get("_meta")
    kept = {key: value for key, value in meta.items() if key != SERVER_INFO_KEY} if isinstance(meta, dict) else {}
    return {**merged, "supportedVersions": supported, "capabilities": capabilities, "_meta": {**kept, SERVER_INFO_KEY: info}, **instructions}
