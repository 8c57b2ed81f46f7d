"""The poisoning checks of `mcpspec lock`: judge what each locked server offers, carry the
acceptances a reviewer recorded, and say what blocks the write."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpspec.ir.plan import Plan
from mcpspec.poisoning.check import check_item, check_offer
from mcpspec.poisoning.context import Accept, blocking, describe, item_key, parse_accept, server_context
from mcpspec.poisoning.model import KEY_FIELD, Kind, PoisonFinding, ServerContext
from mcpspec.run.lockfile import KINDS, Lock


@dataclass(frozen=True)
class Screening:
    """What the checks found in the servers a lock run pinned."""

    findings: tuple[PoisonFinding, ...] = ()
    accepted: tuple[Accept, ...] = ()  # the acceptances that cover a finding (recorded in the lock)
    unused: tuple[Accept, ...] = ()  # --accept given, but it covers no finding
    lock: Lock | None = None  # the lock with the acceptances recorded

    @property
    def blocking(self) -> list[PoisonFinding]:
        return blocking(self.findings, self.accepted)

    def report(self, where: Mapping[str, str]) -> str:
        """One line per finding after its server's file:line:col; ``where`` maps a server to it."""
        lines = []
        blocked = set(self.blocking)
        for finding in self.findings:
            state = "error" if finding in blocked else ("accepted" if any(a.covers(finding) for a in self.accepted) else "warning")
            hint = f" (accept it with --accept {finding.accept})" if finding in blocked else ""
            lines.append(f"{where.get(finding.server, '')}: {state}: {describe(finding)}{hint}")
        lines += [f"warning: --accept {accept} matches no finding; it is not recorded" for accept in self.unused]
        return "".join(line + "\n" for line in lines)


def offered_items(lock: Lock, server: str) -> dict[Kind, list[dict[str, Any]]]:
    """Each pinned item of ``server`` as its JSON, key field included."""
    return {kind: [{KEY_FIELD[kind]: key, **pin} for key, pin in lock.pins(server, kind).items()] for kind in KINDS}


def screen(plan: Plan, previous: Lock, lock: Lock, servers: Sequence[str], accepts: Iterable[Accept]) -> Screening:
    """Judge ``servers`` as ``lock`` pins them; accept what ``accepts`` names, and what the previous
    lock accepted on an item that has not changed since."""
    given = list(accepts)
    pinned = {name: list(pins.of("tools")) for name, pins in lock.servers.items()}
    findings: list[PoisonFinding] = []
    accepted: list[Accept] = []
    for server in servers:
        ctx = server_context(plan, server, pinned)
        found = check_offer(ctx, offered_items(lock, server), lock.servers[server].initialize)
        findings += found
        kept = [accept for accept in (parse_accept(text, server) for text in previous.accepted(server)) if _unchanged(previous, lock, accept)]
        covering = [accept for accept in [*kept, *(a for a in given if a.server == server)] if any(accept.covers(f) for f in found)]
        accepted += covering
        lock = lock.with_accepted(server, (f"{a.rule}:{a.item}" for a in covering))
    unused = tuple(a for a in given if a not in accepted)
    return Screening(tuple(sorted(findings)), tuple(sorted(set(accepted))), unused, lock)


def _unchanged(previous: Lock, lock: Lock, accept: Accept) -> bool:
    """Whether the item an acceptance names is pinned now as it was when it was accepted."""
    kind, key = item_key(accept.item)
    if kind == "initialize":
        before, now = previous.servers[accept.server].initialize, lock.servers[accept.server].initialize
        return before is not None and before == now
    before_pin = previous.pins(accept.server, kind).get(key)
    return before_pin is not None and before_pin == lock.pins(accept.server, kind).get(key)


@dataclass(frozen=True)
class Guard:
    """The poisoning checks of `mcpspec run`: which items of a listing have blocking findings."""

    context: ServerContext
    accepted: tuple[Accept, ...] = ()

    @classmethod
    def of(cls, plan: Plan, server: str, lock: Lock | None, agent: str | None) -> Guard:
        """The guard of ``server``: its context from the spec and the lock, and what the lock accepts."""
        pinned = {name: list(pins.of("tools")) for name, pins in lock.servers.items()} if lock is not None else {}
        accepted = tuple(parse_accept(text, server) for text in lock.accepted(server)) if lock is not None else ()
        return cls(server_context(plan, server, pinned, agent), accepted)

    def blocking(self, kind: Kind, item: Mapping[str, Any]) -> list[PoisonFinding]:
        """The blocking findings on one item (its JSON, key field included)."""
        return blocking(check_item(self.context, kind, item), self.accepted)


def detail(findings: Sequence[PoisonFinding]) -> str:
    """Why an item is refused, as the client is told: the rules only. What they found quotes the
    server's text, which must not reach the model through the refusal (the audit log has it)."""
    from mcpspec.rules.registry import find

    names = sorted({f"{f.rule} {rule.slug}" for f in findings if (rule := find(f.rule)) is not None})
    return f"tool poisoning: {', '.join(names)}"


def evidence(findings: Sequence[PoisonFinding]) -> tuple[str, ...]:
    """Each finding for the audit log: rule, JSON path and what it found (printable ASCII)."""
    return tuple(f"{f.rule} {f.where}: {f.message}" for f in findings)
