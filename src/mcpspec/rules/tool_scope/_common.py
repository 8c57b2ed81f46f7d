"""Transport questions the tool-scope rules share."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport


def http_servers(plan: Plan, launched_only: bool = True) -> Iterator[tuple[EffectiveSandbox, HttpTransport]]:
    """(server, transport) for each server spoken to over HTTP; by default only the ones mcpspec launches."""
    for server in plan.servers.values():
        if isinstance(server.transport, HttpTransport) and (server.runs_here or not launched_only):
            yield server, server.transport


def transport_path(server: EffectiveSandbox, *keys: str) -> SpecPath:
    return (*server.path, "transport", *keys)


def loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (also IPv4-mapped), and the localhost names (RFC 6761)."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))
