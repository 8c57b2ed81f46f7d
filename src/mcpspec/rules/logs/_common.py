"""Helpers the logging rules share.

Logging settings are often inherited from ``defaults``: every server then
shares one origin, and a rule reports that place once, naming the servers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox


def by_origin(
    servers: Iterable[EffectiveSandbox], dotted: str, offends: Callable[[EffectiveSandbox], bool]
) -> dict[SpecPath, list[EffectiveSandbox]]:
    """The offending servers, grouped by the spec path that set ``dotted`` for them (in file order)."""
    groups: dict[SpecPath, list[EffectiveSandbox]] = {}
    for server in servers:
        if offends(server):
            groups.setdefault(server.origin(dotted), []).append(server)
    return groups


def quoted(servers: Iterable[EffectiveSandbox]) -> str:
    """``'a', 'b'``."""
    return ", ".join(f"'{server.name}'" for server in servers)


def named(servers: list[EffectiveSandbox]) -> str:
    """``server 'a'`` or ``servers 'a', 'b'``."""
    return f"server {quoted(servers)}" if len(servers) == 1 else f"servers {quoted(servers)}"


def secret_names(server: EffectiveSandbox) -> str:
    """``secret 'a'`` or ``secrets 'a', 'b'``."""
    names = list(dict.fromkeys(grant.name for grant in server.secrets))
    quoted = ", ".join(f"'{name}'" for name in names)
    return f"secret {quoted}" if len(names) == 1 else f"secrets {quoted}"
