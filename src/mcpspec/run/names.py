"""The names an agent endpoint shows for its servers' tools and prompts (`mcpspec run FILE --agent NAME`).

A name only one server offers is shown as it is. A name several servers offer is shown as
``SERVER__NAME`` on each of them (so no server's tool takes another's name silently); the owning
relay always receives the real name, so its allowlist, pins and approvals judge what it knows. A
prefixed name that equals a name another server offers as it is would make one of the two
unreachable or another server's in disguise: both are left out, and lint's TS011 reports the
spec that allows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SEPARATOR = "__"


def collisions(offers: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Each name offered by more than one server, with those servers in order."""
    owners: dict[str, list[str]] = {}
    for server, names in offers.items():
        for name in dict.fromkeys(names):
            owners.setdefault(name, []).append(server)
    return {name: servers for name, servers in owners.items() if len(servers) > 1}


def exposed(offers: Mapping[str, Sequence[str]]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """The shown name of every offered one -> (server, real name); and the prefixed names left out
    because another server offers the same name as it is."""
    shared = collisions(offers)
    shown: dict[str, tuple[str, str]] = {}
    for server, names in offers.items():
        for name in dict.fromkeys(names):
            if name not in shared:
                shown[name] = (server, name)
    left_out: list[str] = []
    squatted: set[str] = set()
    for server, names in offers.items():
        for name in dict.fromkeys(names):
            if name in shared:
                prefixed = f"{server}{SEPARATOR}{name}"
                if prefixed in shown:
                    left_out.append(prefixed)
                    squatted.update([prefixed] if shown[prefixed][1] == prefixed else [])
                else:
                    shown[prefixed] = (server, name)
    for name in squatted:  # the squatter too: a model reads A__send as A's send, whoever offers it
        del shown[name]
    return shown, left_out
