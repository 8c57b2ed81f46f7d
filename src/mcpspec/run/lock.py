"""`mcpspec lock`: start servers in their sandboxes, read the tools they offer, pin them in mcp-sandbox.lock.

Each server is started only through its bubblewrap launcher (:mod:`mcpspec.run.launch`), spoken to
with the `mcp` SDK's stdio client, and asked for every page of `tools/list`. Nothing is written
unless every server answered, so a failure leaves the previous lock as it was.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mcpspec.ir.plan import Plan
from mcpspec.redact import redact
from mcpspec.run.launch import LaunchError, prepared_launcher
from mcpspec.run.lockfile import Lock, load_lock, lock_path, lockable, write_lock
from mcpspec.settings import Settings

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import Tool

DEFAULT_TIMEOUT = 30.0
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
class ServerChanges:
    """How one server's offer compares with its previous pins, and with the spec's `tools:`."""

    server: str
    tools: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (tool, the lock fields that differ)
    newly_pinned: bool = False  # the previous lock had no entry for the server
    unlisted: tuple[str, ...] = ()  # offered, but not in the spec's tools
    not_offered: tuple[str, ...] = ()  # in the spec's tools, but not offered

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

    @property
    def differs(self) -> bool:
        return bool(self.dropped) or any(s.differs for s in self.servers)


def chosen_servers(plan: Plan, names: Sequence[str]) -> list[str]:
    """The servers to lock: ``names``, or every server of the plan that `mcpspec lock` can pin."""
    if not names:
        return [name for name, server in plan.servers.items() if lockable(server)]
    for name in names:
        server = plan.servers.get(name)
        if server is None:
            raise LockFailure(f"no server named {name!r} (the spec has: {', '.join(sorted(plan.servers))})")
        if not server.runs_here:
            raise LockFailure(f"server {name!r} has placement: external; it runs elsewhere and mcpspec lock cannot start it", name)
        if server.transport.type != "stdio":
            raise LockFailure(f"server {name!r} speaks HTTP; mcpspec lock pins the tools of stdio servers", name)
    return list(dict.fromkeys(names))


def compare(previous: Lock, server: str, offered: Sequence[Tool], listed: Sequence[str]) -> ServerChanges:
    checks = previous.check(server, offered)
    names = [tool.name for tool in offered]
    return ServerChanges(
        server=server,
        tools=len(offered),
        added=tuple(sorted(c.name for c in checks if c.verdict == "new")),
        removed=tuple(previous.missing(server, offered)),
        changed=tuple(sorted((c.name, c.changed) for c in checks if c.verdict == "changed")),
        newly_pinned=server not in previous.servers,
        unlisted=tuple(sorted(set(names) - set(listed))),
        not_offered=tuple(sorted(set(listed) - set(names))),
    )


def lock_spec(spec: str | os.PathLike[str], plan: Plan, names: Sequence[str] = (), settings: Settings | None = None, timeout: float = DEFAULT_TIMEOUT, check: bool = False) -> LockOutcome:
    """Lock ``names`` (default: every lockable server) of the spec ``plan`` was loaded from.

    Raises LockError when the previous lock cannot be read and LockFailure naming the server that
    could not be locked; either way nothing is written.
    """
    path = lock_path(spec)
    previous = load_lock(path) if path.exists() else Lock()
    lock = Lock({name: pins for name, pins in previous.servers.items() if name in plan.servers})
    dropped = tuple(sorted(set(previous.servers) - set(plan.servers)))
    changes = []
    for name in chosen_servers(plan, names):
        offered = offered_tools(spec, name, settings, timeout)
        changes.append(compare(previous, name, offered, list(plan.servers[name].tools)))
        lock = lock.with_server(name, offered)
    outcome = LockOutcome(path, plan, tuple(changes), dropped, lock=lock)
    if check or (path.exists() and path.read_text(encoding="utf-8") == lock.dumps()):
        return outcome
    write_lock(path, lock)
    return LockOutcome(path, plan, tuple(changes), dropped, written=True, lock=lock)


def offered_tools(spec: str | os.PathLike[str], server: str, settings: Settings | None, timeout: float) -> list[Tool]:
    """Start ``server`` through its bwrap launcher and return every tool it lists."""
    try:
        with prepared_launcher(spec, server, settings) as launcher, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                return asyncio.run(asyncio.wait_for(_list_tools(server, launcher.command, errlog), timeout))
            except Exception as exc:  # noqa: BLE001 - whatever the transport raised, the server is what failed
                inner = innermost(exc)
                if isinstance(inner, LockFailure):
                    raise inner from None
                if isinstance(inner, TimeoutError):
                    raise LockFailure(f"server {server!r} did not answer within {timeout:g}s{_said(errlog)}", server) from None
                raise LockFailure(f"server {server!r} did not start or broke off the session ({_reason(inner)}){_said(errlog)}", server) from None
    except LaunchError as exc:
        raise LockFailure(f"server {server!r} cannot be launched: {exc}", server) from None


async def _list_tools(server: str, command: Path, errlog: TextIO) -> list[Tool]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    # The launcher passes the server only what the spec declares, as it does for any client.
    params = StdioServerParameters(command=str(command), env=dict(os.environ))
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await all_tools(session, server)


async def all_tools(session: ClientSession, server: str) -> list[Tool]:
    """Every tool of an initialized session, following `tools/list` cursors to the last page."""
    from mcp.types import PaginatedRequestParams

    tools: list[Tool] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor is not None else None)
        tools.extend(result.tools)
        cursor = result.next_cursor
        if cursor is None:
            break
        if cursor in seen:
            raise LockFailure(f"server {server!r}: tools/list repeated the cursor {shown(cursor)!r}", server)
        seen.add(cursor)
    else:
        raise LockFailure(f"server {server!r}: tools/list had more than {MAX_PAGES} pages", server)
    duplicates = sorted(name for name, count in Counter(tool.name for tool in tools).items() if count > 1)
    if duplicates:
        raise LockFailure(f"server {server!r}: tools/list names a tool more than once: {', '.join(map(shown, duplicates))}", server)
    return tools


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


def summary(outcome: LockOutcome, lock_name: str, check: bool) -> str:
    """What changed versus the previous lock, server by server, then what was done."""
    lines = []
    for item in outcome.servers:
        counts = f"{len(item.added)} added, {len(item.removed)} removed, {len(item.changed)} changed"
        state = "first pinned" if item.newly_pinned else (counts if item.differs else "unchanged")
        lines.append(f"{shown(item.server)}: {item.tools} tools, {state}")
        lines += [f"  + {shown(name)}" for name in item.added]
        lines += [f"  - {shown(name)}" for name in item.removed]
        lines += [f"  ~ {shown(name)}: {', '.join(fields)}" for name, fields in item.changed]
    lines += [f"{shown(name)}: no longer in the spec, its pins are dropped" for name in outcome.dropped]
    if check:
        verdict = f"{lock_name} differs from what the servers offer" if outcome.differs else f"{lock_name} matches what the servers offer"
    else:
        verdict = f"wrote {lock_name}" if outcome.written else f"{lock_name} is up to date"
    return "\n".join([*lines, verdict]) + "\n"


def warnings(outcome: LockOutcome) -> str:
    """Tools a server offers that the spec does not list, and listed tools it does not offer (file:line:col)."""
    plan = outcome.plan
    lines = []
    for item in outcome.servers:
        span = plan.source.anchor_span((*plan.servers[item.server].path, "tools"))
        where = f"{plan.file}:{span.line}:{span.col}"
        if item.unlisted:
            lines.append(f"{where}: warning: server {shown(item.server)!r} offers tools the spec does not list: {', '.join(map(shown, item.unlisted))}")
        if item.not_offered:
            lines.append(f"{where}: warning: the spec lists tools server {shown(item.server)!r} does not offer: {', '.join(map(shown, item.not_offered))}")
    return "".join(line + "\n" for line in lines)
