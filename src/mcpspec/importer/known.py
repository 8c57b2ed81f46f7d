"""What the importer learns about a well-known server from the built-in catalog.

``lookup`` is the one place the importer asks ``mcpspec.catalog``; a server the catalog
does not recognise is imported as unknown, its choices marked for review.
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
    registry: str | None = None  # npm, pypi or oci: where the pinned release comes from
    package: str | None = None  # its package or image name
    version: str | None = None  # the catalog's pin
    command: Sequence[str] = ()  # its installed program, started with no download
    mounts: Sequence[tuple[str, str, str, str]] = ()  # (workspace.DIR, path inside, ro or rw, why) that program needs
    archived: bool = False  # upstream no longer maintains it
    successor: str | None = None  # the maintained server that replaces it: "NAME (PACKAGE)"


def lookup(command: Sequence[str], url: str | None) -> Known | None:
    """The catalog's entry for a server launched by ``command`` or reached at ``url``, or None."""
    from mcpspec import catalog

    entry = (catalog.lookup(list(command)) if command else None) or (catalog.lookup(url) if url else None)
    if entry is None:
        return None
    credential = entry.credential
    successor = catalog.get(entry.successor) if entry.successor else None
    return Known(
        name=entry.name,
        kind=entry.kind,
        tools={tool.name: tuple(tool.effects) for tool in entry.tools},
        egress=tuple(entry.egress),
        secret_env=credential.env if credential else None,
        scopes=tuple(credential.scopes) if credential and credential.scopes != "none" else (),
        ttl=credential.ttl if credential and credential.ttl != "none" else None,
        registry=entry.package.registry,
        package=entry.package.name,
        version=entry.package.version,
        command=tuple(entry.command),
        mounts=tuple((mount.source, mount.to, mount.mode, mount.why) for mount in entry.mounts),
        archived=entry.archived,
        successor=f"{successor.name} ({successor.package.name})" if successor else None,
    )
