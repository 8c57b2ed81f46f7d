"""`mcpspec lock`: start servers in their sandboxes, read what they offer, pin it in mcp-sandbox.lock.

Each server is started only through its bubblewrap launcher (:mod:`mcpspec.run.launch`), spoken to
with the `mcp` SDK's stdio client, and asked for every page of `tools/list` (and of `prompts/list`,
`resources/list` and `resources/templates/list` when it offers them); its `initialize` answer is
pinned too. Nothing is written unless every server answered, so a failure leaves the previous lock
as it was.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mcpspec.ir.plan import Plan
from mcpspec.poisoning.context import Accept
from mcpspec.poisoning.screening import Screening, screen
from mcpspec.redact import redact
from mcpspec.run.launch import LaunchError, RemotePlan, prepared_server
from mcpspec.run.lockfile import ITEM_OF, KINDS, Kind, Lock, canonical, initialize_pin, load_lock, lock_path, lockable, write_lock
from mcpspec.settings import Settings

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import InitializeResult

DEFAULT_TIMEOUT = 30.0
METHOD_NOT_FOUND = -32601
# A server that keeps handing out cursors is not listing tools any more.
MAX_PAGES = 1000


class LockFailure(Exception):
    """A server could not be locked (it did not start, did not answer, or cannot be locked); names it."""

    def __init__(self, message: str, server: str | None = None) -> None:
        super().__init__(message)
        self.server = server

    def located(self, plan: Plan) -> str:
        """The message after the file:line:col of the server it is about (the file alone otherwise)."""
        if self.server is None or self.server not in plan.servers:
            return f"{plan.file}: {self}"
        span = plan.source.anchor_span(plan.servers[self.server].path)
        return f"{plan.file}:{span.line}:{span.col}: {self}"


@dataclass(frozen=True)
class Offer:
    """What one server offered: its `initialize` answer and every item it listed, by kind (as JSON)."""

    initialize: InitializeResult
    items: dict[Kind, list[Any]]


@dataclass(frozen=True)
class Changed:
    """One pinned item (or `initialize`) whose fields differ: each field's pinned and offered text."""

    label: str  # "name" for a tool, "prompt name", "resource uri", ..., "initialize"
    fields: tuple[tuple[str, Any, Any], ...]  # (field, pinned value or None, offered value or None)


@dataclass(frozen=True)
class ServerChanges:
    """How one server's offer compares with its previous pins, and with the spec's `tools:`."""

    server: str
    tools: int
    added: tuple[str, ...] = ()  # labels, as Changed.label
    removed: tuple[str, ...] = ()
    changed: tuple[Changed, ...] = ()
    newly_pinned: bool = False  # the previous lock had no entry for the server
    unlisted: tuple[str, ...] = ()  # offered, but not in the spec's tools
    not_offered: tuple[str, ...] = ()  # in the spec's tools, but not offered
    added_text: tuple[Changed, ...] = ()  # the fields of each added item

    @property
    def differs(self) -> bool:
        return self.newly_pinned or bool(self.added or self.removed or self.changed)


@dataclass(frozen=True)
class LockOutcome:
    """What a lock run found; ``written`` is False for --check or when nothing changed."""

    path: Path
    plan: Plan
    servers: tuple[ServerChanges, ...]
    dropped: tuple[str, ...] = ()  # pinned servers the spec no longer has
    written: bool = False
    lock: Lock = field(default_factory=Lock)
    outdated: int | None = None  # the previous lock's version, when it was an older one
    screening: Screening = field(default_factory=Screening)  # the tool-poisoning findings (mcpspec.poisoning)

    @property
    def differs(self) -> bool:
        return self.outdated is not None or bool(self.dropped) or any(s.differs for s in self.servers)


def chosen_servers(plan: Plan, names: Sequence[str]) -> list[str]:
    """The servers to lock: ``names``, or every server of the plan that `mcpspec lock` can pin."""
    if not names:
        return [name for name, server in plan.servers.items() if lockable(server)]
    for name in names:
        server = plan.servers.get(name)
        if server is None:
            raise LockFailure(f"no server named {name!r} (the spec has: {', '.join(sorted(plan.servers))})")
        if not server.runs_here and server.transport.type != "http":
            raise LockFailure(f"server {name!r} has placement: external but is not reached over streamable HTTP (transport type http)", name)
        if server.runs_here and server.transport.type != "stdio":
            raise LockFailure(f"server {name!r} speaks HTTP; mcpspec lock pins the tools of stdio servers", name)
    return list(dict.fromkeys(names))


def label(kind: Kind, key: str) -> str:
    return key if kind == "tools" else f"{ITEM_OF[kind]} {key}"


def compare(previous: Lock, server: str, offer: Offer, listed: Sequence[str]) -> ServerChanges:
    added: list[str] = []
    removed: list[str] = []
    changed: list[Changed] = []
    added_text: list[Changed] = []
    for kind in KINDS:
        items = offer.items.get(kind, [])
        offered = dict(canonical(kind, item) for item in items)
        pins = previous.pins(server, kind)
        for check in previous.check(server, items, kind):
            if check.verdict == "new":
                added.append(label(kind, check.name))
                added_text.append(Changed(label(kind, check.name), tuple((name, None, value) for name, value in sorted(offered[check.name].items()))))
            elif check.verdict == "changed":
                pin, now = pins[check.name], offered[check.name]
                changed.append(Changed(label(kind, check.name), tuple((name, pin.get(name), now.get(name)) for name in check.changed)))
        removed += [label(kind, key) for key in previous.missing(server, items, kind)]
    fields = previous.check_initialize(server, offer.initialize)
    if fields:
        pin, now = previous.servers[server].initialize or {}, initialize_pin(offer.initialize)
        changed.append(Changed("initialize", tuple((name, pin.get(name), now.get(name)) for name in fields)))
    names = [canonical("tools", tool)[0] for tool in offer.items.get("tools", [])]
    return ServerChanges(
        server=server,
        tools=len(names),
        added=tuple(sorted(added)),
        removed=tuple(sorted(removed)),
        changed=tuple(sorted(changed, key=lambda item: item.label)),
        newly_pinned=server not in previous.servers,
        unlisted=tuple(sorted(set(names) - set(listed))),
        not_offered=tuple(sorted(set(listed) - set(names))),
        added_text=tuple(sorted(added_text, key=lambda item: item.label)),
    )


def lock_spec(
    spec: str | os.PathLike[str],
    plan: Plan,
    names: Sequence[str] = (),
    settings: Settings | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = False,
    accepts: Sequence[Accept] = (),
) -> LockOutcome:
    """Lock ``names`` (default: every lockable server) of the spec ``plan`` was loaded from.

    Raises LockError when the previous lock cannot be read and LockFailure naming the server that
    could not be locked; either way nothing is written. Nothing is written either when what a
    server offers has a blocking tool-poisoning finding that ``accepts`` (or the previous lock,
    for an unchanged item) does not accept.
    """
    path = lock_path(spec)
    previous = load_lock(path, outdated_ok=True) if path.exists() else Lock()
    lock = Lock({name: pins for name, pins in previous.servers.items() if name in plan.servers})
    dropped = tuple(sorted(set(previous.servers) - set(plan.servers)))
    changes = []
    chosen = chosen_servers(plan, names)
    for name in chosen:
        offer = offered(spec, name, settings, timeout)
        changes.append(compare(previous, name, offer, list(plan.servers[name].tools)))
        lock = lock.with_server(name, offer.items.get("tools", []), offer.initialize, **{kind: offer.items.get(kind, []) for kind in KINDS[1:]})
    screening = screen(plan, previous, lock, chosen, accepts)
    lock = screening.lock or lock
    outcome = LockOutcome(path, plan, tuple(changes), dropped, lock=lock, outdated=previous.outdated, screening=screening)
    if check or screening.blocking or (path.exists() and path.read_text(encoding="utf-8") == lock.dumps()):
        return outcome
    write_lock(path, lock)
    return LockOutcome(path, plan, tuple(changes), dropped, written=True, lock=lock, outdated=previous.outdated, screening=screening)


def offered(spec: str | os.PathLike[str], server: str, settings: Settings | None, timeout: float) -> Offer:
    """Start ``server`` through its bwrap launcher (or reach it at its URL when external) and return what it offers."""
    try:
        with prepared_server(spec, server, settings) as launcher, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                if isinstance(launcher, RemotePlan):
                    return asyncio.run(asyncio.wait_for(_remote_offer(launcher.plan, server), timeout))
                return asyncio.run(asyncio.wait_for(_offer(server, launcher.command, errlog), timeout))
            except Exception as exc:  # noqa: BLE001 - whatever the transport raised, the server is what failed
                inner = innermost(exc)
                if isinstance(inner, LockFailure):
                    raise inner from None
                if isinstance(inner, TimeoutError):
                    raise LockFailure(f"server {server!r} did not answer within {timeout:g}s{_said(errlog)}", server) from None
                raise LockFailure(f"server {server!r} did not start or broke off the session ({_reason(inner)}){_said(errlog)}", server) from None
    except LaunchError as exc:
        raise LockFailure(f"server {server!r} cannot be launched: {exc}", server) from None


async def _offer(server: str, command: Path, errlog: TextIO) -> Offer:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    # The launcher passes the server only what the spec declares, as it does for any client.
    params = StdioServerParameters(command=str(command), env=dict(os.environ))
    async with stdio_client(params, errlog=errlog) as (read, write):
        return await _offer_over(server, read, write)


async def _remote_offer(plan: Plan, server: str) -> Offer:
    from mcpspec.run.remote_client import remote_bridge, remote_streams

    async with remote_streams(remote_bridge(plan.servers[server])) as (read, write):
        return await _offer_over(server, read, write)


async def _offer_over(server: str, read: Any, write: Any) -> Offer:
    from mcp import ClientSession

    async with ClientSession(read, write) as session:
        hello = await session.initialize()
        capabilities = hello.capabilities
        items: dict[Kind, list[Any]] = {"tools": await all_items(session, server, "tools")}
        offers: dict[Kind, object] = {"prompts": capabilities.prompts, "resources": capabilities.resources, "resource_templates": capabilities.resources}
        for kind in (kind for kind, capability in offers.items() if capability is not None):
            items[kind] = await optional_items(session, server, kind)
        return Offer(hello, items)


async def optional_items(session: ClientSession, server: str, kind: Kind) -> list[Any]:
    """A listing the server may not implement (method not found): then it offers none."""
    from mcp.shared.exceptions import MCPError

    try:
        return await all_items(session, server, kind)
    except MCPError as exc:
        if exc.error.code != METHOD_NOT_FOUND:
            raise
        return []


_LISTS: dict[Kind, tuple[str, str]] = {
    "tools": ("list_tools", "tools"), "prompts": ("list_prompts", "prompts"),
    "resources": ("list_resources", "resources"), "resource_templates": ("list_resource_templates", "resource_templates"),
}  # fmt: skip
_METHODS: dict[Kind, str] = {"tools": "tools/list", "prompts": "prompts/list", "resources": "resources/list", "resource_templates": "resources/templates/list"}


async def all_items(session: ClientSession, server: str, kind: Kind = "tools") -> list[Any]:
    """Every item of one listing of an initialized session, following cursors to the last page."""
    from mcp.types import PaginatedRequestParams

    call, attribute = _LISTS[kind]
    method = _METHODS[kind]
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        result = await getattr(session, call)(params=PaginatedRequestParams(cursor=cursor) if cursor is not None else None)
        items.extend(getattr(result, attribute))
        cursor = result.next_cursor
        if cursor is None:
            break
        if cursor in seen:
            raise LockFailure(f"server {server!r}: {method} repeated the cursor {shown(cursor)!r}", server)
        seen.add(cursor)
    else:
        raise LockFailure(f"server {server!r}: {method} had more than {MAX_PAGES} pages", server)
    duplicates = sorted(key for key, count in Counter(canonical(kind, item)[0] for item in items).items() if count > 1)
    if duplicates:
        raise LockFailure(f"server {server!r}: {method} names a {ITEM_OF[kind]} more than once: {', '.join(map(shown, duplicates))}", server)
    return items


async def all_tools(session: ClientSession, server: str) -> list[Any]:
    """Every tool of an initialized session, following `tools/list` cursors to the last page."""
    return await all_items(session, server, "tools")


def innermost(exc: BaseException) -> BaseException:
    """The first exception inside exception groups (the SDK raises through task groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _said(errlog: TextIO) -> str:
    """The last lines the launcher wrote to stderr, secret-shaped strings masked."""
    errlog.seek(0)
    lines = [line for line in errlog.read().splitlines() if line.strip()][-5:]
    return "; the launcher said:\n  " + "\n  ".join(redact(line) for line in lines) if lines else ""


def shown(name: str) -> str:
    """A name a server chose, safe to print on a terminal (control characters escaped)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def text_of(value: Any) -> str:
    """A pinned value as one line a terminal shows as it is: JSON in printable ASCII, whole."""
    return "(absent)" if value is None else json.dumps(value, ensure_ascii=True, sort_keys=True).replace("\x7f", "\\u007f")


def summary(outcome: LockOutcome, lock_name: str, check: bool) -> str:
    """What changed versus the previous lock, server by server (the new text of each changed field), then what was done."""
    lines = []
    if outcome.outdated is not None:
        lines.append(
            f"{lock_name} is a version {outcome.outdated} lock (it pinned only the tools' title, description, schemas and annotations): "
            + ("it needs re-locking; run `mcpspec lock` and review the diff" if check else "every server is pinned again")
        )
    for item in outcome.servers:
        counts = f"{len(item.added)} added, {len(item.removed)} removed, {len(item.changed)} changed"
        state = "first pinned" if item.newly_pinned else (counts if item.differs else "unchanged")
        lines.append(f"{shown(item.server)}: {item.tools} tools, {state}")
        if item.newly_pinned:
            continue
        for text in item.added_text:
            lines.append(f"  + {shown(text.label)}")
            lines += [f"      {name}: {text_of(new)}" for name, _, new in text.fields]
        lines += [f"  - {shown(name)}" for name in item.removed]
        for change in item.changed:
            lines.append(f"  ~ {shown(change.label)}: {', '.join(name for name, _, _ in change.fields)}")
            for name, old, new in change.fields:
                lines += [f"      {name} was: {text_of(old)}", f"      {name} now: {text_of(new)}"]
    lines += [f"{shown(name)}: no longer in the spec, its pins are dropped" for name in outcome.dropped]
    if check:
        verdict = f"{lock_name} differs from what the servers offer" if outcome.differs else f"{lock_name} matches what the servers offer"
    elif outcome.screening.blocking:
        verdict = f"wrote nothing: {len(outcome.screening.blocking)} tool-poisoning finding(s) block {lock_name} (see above)"
    else:
        verdict = f"wrote {lock_name}" if outcome.written else f"{lock_name} is up to date"
    return "\n".join([*lines, verdict]) + "\n"


def server_places(outcome: LockOutcome) -> dict[str, str]:
    """The file:line:col of each locked server's `tools:` in the spec."""
    plan = outcome.plan
    places = {}
    for item in outcome.servers:
        span = plan.source.anchor_span((*plan.servers[item.server].path, "tools"))
        places[item.server] = f"{plan.file}:{span.line}:{span.col}"
    return places


def warnings(outcome: LockOutcome) -> str:
    """Tools a server offers that the spec does not list, and listed tools it does not offer
    (file:line:col), then the tool-poisoning findings."""
    places = server_places(outcome)
    lines = []
    for item in outcome.servers:
        where = places[item.server]
        if item.unlisted:
            lines.append(f"{where}: warning: server {shown(item.server)!r} offers tools the spec does not list: {', '.join(map(shown, item.unlisted))}")
        if item.not_offered:
            lines.append(f"{where}: warning: the spec lists tools server {shown(item.server)!r} does not offer: {', '.join(map(shown, item.not_offered))}")
    return "".join(line + "\n" for line in lines) + outcome.screening.report(places)
