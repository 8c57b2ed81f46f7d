"""What the policies say of each tool of one server, for one gateway's view of the arguments."""

from __future__ import annotations

from dataclasses import dataclass

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.cedar.rules import FALSE, Arguments, NotExact, regions


@dataclass(frozen=True, slots=True)
class Decided:
    """One listed tool: its allowed and approval regions (FALSE: none), and why its rules were not compiled."""

    name: str
    allow: str
    approve: str
    not_exact: str | None = None


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    name: str
    tools: list[Decided]
    unlisted_allowed: bool  # `mcpspec run` asks a person before each call of an unlisted tool
    types: dict[str, str]  # argument name -> Cedar type, for the schema


def decide(plan: Plan, sandbox: EffectiveSandbox, args: Arguments) -> ServerPolicy:
    tools: list[Decided] = []
    types: dict[str, str] = {}
    for name in sorted(sandbox.tools):
        try:
            found = regions(plan, sandbox.tools[name], args)
        except NotExact as exc:
            tools.append(Decided(name, FALSE, FALSE, str(exc)))
            continue
        clash = sorted(arg for arg, kind in found.types.items() if types.get(arg, kind) != kind)
        if clash:
            tools.append(Decided(name, FALSE, FALSE, f"{clash[0]!r} is compared as another type by another tool of the server"))
            continue
        types.update(found.types)
        tools.append(Decided(name, found.allow, found.approve))
    return ServerPolicy(sandbox.name, tools, sandbox.unlisted_tools == "allow", types)
