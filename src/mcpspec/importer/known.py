"""What the importer may learn about a well-known server from the built-in catalog.

``lookup`` is the one place the importer asks; until the catalog (``mcpspec.catalog``)
is connected it knows nothing and every server is imported as unknown, its choices marked
for review.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Known:
    """A catalog entry as the importer uses it."""

    name: str
    kind: str = "other"
    tools: Mapping[str, Sequence[str]] = field(default_factory=dict)  # tool -> effects
    egress: Sequence[str] = ()
    secret_env: str | None = None  # the env var the credential goes in
    scopes: Sequence[str] = ()
    ttl: str | None = None


def lookup(command: Sequence[str], url: str | None) -> Known | None:
    """The catalog's entry for a server launched by ``command`` or reached at ``url``.
    Not connected yet: always None."""
    del command, url
    return None
