"""The shape of a catalog entry: what a well-known MCP server is and the least privilege it needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Registry = Literal["npm", "pypi", "oci"]
Effect = Literal[
    "none",
    "reads_private",
    "reads_untrusted",
    "writes_local",
    "external_send",
    "exec",
    "deploy",
    "destructive",
    "modify_access",
    "financial",
    "exports_data",
]
Kind = Literal["code-exec", "filesystem", "browser", "data", "deploy", "package", "search", "memory", "other"]


@dataclass(frozen=True)
class CatalogTool:
    """One tool of the server and what its calls do."""

    name: str
    description: str
    effects: tuple[Effect, ...]
    approval: Literal["always", "per-session"] | None = None


@dataclass(frozen=True)
class Credential:
    """The least-privilege credential the server should get (never a value, only its shape)."""

    secret: str
    """Name of the entry under the spec's top-level `secrets`."""
    env: str
    """Environment variable the server reads it from."""
    description: str
    scopes: tuple[str, ...] | Literal["none"]
    ttl: str
    """A duration such as 8h, or none for a credential that does not expire."""
    advice: str
    """What a person must do to mint it with the least privilege."""


@dataclass(frozen=True)
class CatalogMount:
    """A workspace directory the server needs, and why."""

    source: str
    to: str
    mode: Literal["ro", "rw"]
    why: str


@dataclass(frozen=True)
class Package:
    """Where the server comes from, pinned."""

    registry: Registry
    name: str
    version: str


@dataclass(frozen=True)
class Entry:
    """A well-known MCP server: how it is launched and the least privilege it needs."""

    name: str
    description: str
    kind: Kind
    package: Package
    command: tuple[str, ...]
    """How the server is started inside its sandbox (its installed program, no download at start)."""
    tools: tuple[CatalogTool, ...]
    egress: tuple[str, ...] = ()
    """Destinations it needs (host:port); empty: none."""
    credential: Credential | None = None
    mounts: tuple[CatalogMount, ...] = ()
    aliases: tuple[str, ...] = ()
    """Other package names and images that run the same server (older names, docker images)."""
    urls: tuple[str, ...] = ()
    """URL prefixes of the vendor's remote endpoint of the same server."""
    review: tuple[str, ...] = field(default_factory=tuple)
    """Choices a person must review before trusting the generated spec."""
    archived: bool = False
    """The upstream project no longer maintains this server."""
    successor: str | None = None
    """The catalog name of the maintained server that replaces an archived one, when there is one."""

    @property
    def version(self) -> str:
        """The pinned version."""
        return self.package.version

    @property
    def launch(self) -> tuple[str, ...]:
        """How client configs usually start it outside a sandbox (downloads at start)."""
        if self.package.registry == "npm":
            return ("npx", "-y", f"{self.package.name}@{self.package.version}")
        if self.package.registry == "pypi":
            return ("uvx", f"{self.package.name}=={self.package.version}")
        return ("docker", "run", "-i", "--rm", f"{self.package.name}:{self.package.version}")
