"""What a build grants one server, as recovered from its emitted files alone.

Each target has a reader (``targets/<name>/reader.py``) that parses the files a
build wrote, never the Plan and never the generator's code, and returns one
:class:`Grants` per server. A property test compares them with the spec, and a
privilege diff between two builds can compare two of them. A reader errs on the
wide side: what it cannot interpret it reports as granted (an ``any``
destination, no limit), so a comparison never calls an artifact narrower than
it is.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal

MountKind = Literal["host", "home", "workspace", "tmpfs"]
Mode = Literal["ro", "rw"]
EndpointKind = Literal["domain", "wildcard", "cidr", "any"]
EgressMode = Literal["none", "proxy", "direct"]


@dataclass(frozen=True, slots=True, order=True)
class MountGrant:
    """Something of the host (or memory) visible at ``target``.

    ``source`` is an absolute host path (host), ``~`` or ``~/...`` (home: the
    invoking user's), a workspace dir name (workspace), or empty (tmpfs).
    """

    target: str
    kind: MountKind
    source: str
    mode: Mode
    size: int | None = None  # bytes, for a tmpfs


@dataclass(frozen=True, slots=True, order=True)
class SecretLanding:
    """A named secret handed in, where it lands (never its value), and where it is read from."""

    name: str
    provider: str  # as the artifact reads it: env, file, systemd-credential
    ref: str
    env: str | None = None
    file: str | None = None


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    """A destination a rule names: ``domain`` (exact name), ``wildcard`` (``*.x``: subdomains
    only), ``cidr`` (a normalized network) or ``any``; ``port`` None means every port."""

    kind: EndpointKind
    host: str
    port: int | None = None

    @property
    def text(self) -> str:
        port = "*" if self.port is None else str(self.port)
        if self.kind == "any":
            return f"*:{port}"
        if self.kind == "cidr" and ":" in self.host:
            return f"[{self.host}]:{port}"
        return f"{self.host}:{port}"


ANY = Endpoint("any", "*")


@dataclass(frozen=True, slots=True)
class EgressGrant:
    """Where the server's connections may go.

    ``none``: no network but its own loopback. ``proxy``: only through a filtering
    proxy. ``direct``: IP rules on the host network. ``allow`` is what rules let
    through (``ANY`` when the default is allow); ``deny`` what is refused before any
    allow rule is consulted, so whatever ``allow`` says; ``host_loopback`` says
    whether the host's own loopback services are reachable.
    """

    mode: EgressMode
    default: Literal["deny", "allow"] = "deny"
    allow: frozenset[Endpoint] = frozenset()
    deny: frozenset[Endpoint] = frozenset()
    host_loopback: bool = False

    def reaches(self, address: str) -> bool:
        """Whether a connection to this literal address (any port) can get through."""
        ip = ipaddress.ip_address(address)
        if self.mode == "none":
            return False
        for endpoint in self.deny:
            if endpoint.kind == "cidr" and endpoint.port is None and _contains(endpoint.host, ip):
                return False
        return any(e.kind == "any" or (e.kind == "cidr" and _contains(e.host, ip)) for e in self.allow)


def _contains(network: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    net = ipaddress.ip_network(network)
    return net.version == ip.version and ip in net


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the server runs as. ``host_uid`` None means a transient uid the service
    manager allocates (never 0); ``capabilities`` is the bounding set (empty: none)."""

    uid: int | None
    gid: int | None
    host_uid: int | None
    capabilities: frozenset[str]
    no_new_privileges: bool

    @property
    def host_root(self) -> bool:
        return self.host_uid == 0


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits as the artifact sets them (None: no limit)."""

    memory: int | None = None  # bytes
    pids: int | None = None
    cpu_percent: float | None = None  # a rate: 100.0 is one core
    cpu_seconds: int | None = None  # a budget of CPU time
    lifetime: float | None = None  # seconds
    idle_timeout: float | None = None  # seconds


@dataclass(frozen=True, slots=True)
class Grants:
    """Everything one server's artifact grants, and the controls it carries a mechanism for.

    ``enforced`` holds the control ids (``mcpspec.targets.base.CONTROLS``) whose
    mechanism the reader found in the files; every other control is left to
    another layer (the client, an orchestrator, a person).
    """

    target: str
    server: str
    mounts: tuple[MountGrant, ...]
    env_set: tuple[tuple[str, str], ...]  # name, value (values are not secrets: env.set and fixed variables)
    env_inherit: tuple[str, ...]  # host variables passed through by name
    env_inherit_all: bool
    secrets: tuple[SecretLanding, ...]
    egress: EgressGrant
    identity: Identity
    limits: Limits
    masked_commands: tuple[str, ...] = ()
    enforced: frozenset[str] = field(default_factory=frozenset)

    @property
    def env_names(self) -> frozenset[str]:
        """Every variable name the artifact itself sets (secrets included; inherited ones apart)."""
        return frozenset([name for name, _ in self.env_set] + [s.env for s in self.secrets if s.env is not None])

    def left_to_other_layer(self, controls: tuple[str, ...]) -> frozenset[str]:
        """Of ``controls``, those this artifact has no mechanism for."""
        return frozenset(c for c in controls if c not in self.enforced)
