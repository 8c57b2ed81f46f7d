"""From the spec and the lock to what the checks need, and which findings block.

A finding blocks (`mcpspec lock` writes nothing and exits 1; `mcpspec run` hides the item and
refuses its calls) when its rule's severity is critical or high and it is not accepted: by
``--accept RULE:SERVER/ITEM`` at `mcpspec lock`, which records the acceptance in the lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mcpspec.ir.plan import Plan
from mcpspec.poisoning.model import BLOCKING, KIND_PREFIX, Kind, PoisonFinding, ServerContext

_KIND_OF = {prefix: kind for kind, prefix in KIND_PREFIX.items()}


def server_context(plan: Plan, server: str, pinned: Mapping[str, Iterable[str]], agent: str | None = None) -> ServerContext:
    """The context of ``server``: its tools' effects and egress from the spec, every server's tool
    names (the spec's and the lock's), and its peers (the servers of its agents, or of ``agent``)."""
    sandbox = plan.servers[server]
    others = {name: frozenset(other.tools) | frozenset(pinned.get(name, ())) for name, other in plan.servers.items()}
    for name, tools in pinned.items():
        others.setdefault(name, frozenset(tools))
    if agent is not None and agent in plan.agents:
        peers = set(plan.agents[agent])
    elif sandbox.agents:
        peers = {member for name in sandbox.agents for member in plan.agents.get(name, ())}
    else:
        peers = set(plan.servers)
    # Instances of one program (the same command, image and package: two filesystem roots) offer
    # the same tools by design; the spec's author chose both, so neither shadows the other.
    program = (sandbox.command, sandbox.image, sandbox.package)
    peers = {name for name in peers if name in plan.servers and (plan.servers[name].command, plan.servers[name].image, plan.servers[name].package) != program}
    return ServerContext(
        server=server,
        effects={name: tuple(tool.effects) for name, tool in sandbox.tools.items()},
        egress_open=sandbox.egress.default == "allow",
        allow=sandbox.egress.allow,
        deny=sandbox.egress.deny,
        others=others,
        peers=frozenset(peers - {server}),
    )


@dataclass(frozen=True, order=True)
class Accept:
    """One accepted finding: a rule on one item of one server."""

    rule: str
    server: str
    item: str  # as PoisonFinding.item: a tool's name, or KIND:KEY, or "initialize"

    def __str__(self) -> str:
        return f"{self.rule}:{self.server}/{self.item}"

    def covers(self, finding: PoisonFinding) -> bool:
        return finding.rule == self.rule and finding.server == self.server and finding.item == self.item


def parse_accept(text: str, server: str | None = None) -> Accept:
    """``RULE:SERVER/ITEM`` (or ``RULE:ITEM`` as the lock records it under ``server``); ValueError says why not.

    RULE is a poisoning rule's id or slug; ITEM a tool's name, ``prompt:NAME``, ``resource:URI``,
    ``template:URI_TEMPLATE``, ``tool:NAME`` (a tool whose name has a ``:`` or is ``initialize``) or ``initialize``.
    """
    from mcpspec.rules.registry import find

    rule_text, sep, rest = text.partition(":")
    if not sep or not rest:
        raise ValueError(f"{text!r}: expected RULE:SERVER/ITEM, such as TP003:github/create_issue")
    rule = find(rule_text)
    if rule is None or rule.category != "tool-poisoning":
        raise ValueError(f"{text!r}: {rule_text!r} is not a tool-poisoning rule (TP001 to TP010, see `mcpspec rules`)")
    if server is None:
        server, sep, rest = rest.partition("/")
        if not sep or not server or not rest:
            raise ValueError(f"{text!r}: expected RULE:SERVER/ITEM, such as TP003:github/create_issue")
    prefix, colon, key = rest.partition(":")
    if colon and prefix not in _KIND_OF:
        raise ValueError(f"{text!r}: {prefix!r} is not one of {', '.join(_KIND_OF)}")
    if colon and prefix == "tool" and ":" not in key and key != "initialize":
        rest = key  # tool:NAME of a plain name is the name
    return Accept(rule.id, server, rest)


def item_key(item: str) -> tuple[Kind, str]:
    """The kind and key an accept's item names (``prompt:NAME`` -> prompts, NAME)."""
    if item == "initialize":
        return "initialize", ""
    prefix, colon, key = item.partition(":")
    return (_KIND_OF[prefix], key) if colon and prefix in _KIND_OF else ("tools", item)


def severity(finding: PoisonFinding) -> str:
    from mcpspec.rules.registry import find

    rule = find(finding.rule)
    assert rule is not None, finding.rule
    return rule.severity


def blocking(findings: Iterable[PoisonFinding], accepted: Iterable[Accept] = ()) -> list[PoisonFinding]:
    """The findings that block: critical or high, and not accepted."""
    accepts = list(accepted)
    return [f for f in findings if severity(f) in BLOCKING and not any(a.covers(f) for a in accepts)]


def describe(finding: PoisonFinding) -> str:
    """One line: the rule, its severity, server/item, the JSON path and the message."""
    from mcpspec.poisoning.text import shown

    return f"{finding.rule} {severity(finding)}: {shown(finding.server)}/{shown(finding.item, 200)} {finding.where}: {finding.message}"
