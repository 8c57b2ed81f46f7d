"""MCP protocol revisions: which `mcpspec run` speaks, which are known, and what each deprecates."""

from __future__ import annotations

from typing import Final

HANDSHAKE: Final = ("2025-06-18", "2025-11-25")  # reached through the initialize handshake
MODERN: Final = ("2026-07-28",)  # no session: version and capabilities in each request's _meta
RELAYED: Final[tuple[str, ...]] = (*HANDSHAKE, *MODERN)  # what the relay speaks on both sides; the spec's default
KNOWN: Final = ("2024-11-05", "2025-03-26", *RELAYED)  # every released revision

# Client capabilities (sampling, roots) and the server's logging, deprecated from 2026-07-28 on.
DEPRECATED_FROM: Final = {"sampling": "2026-07-28", "roots": "2026-07-28", "logging": "2026-07-28"}


def effective(listed: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """The revisions the relay speaks for a server whose spec lists ``listed`` (unknown ones dropped)."""
    if listed is None:
        return RELAYED
    return tuple(revision for revision in RELAYED if revision in listed)
