"""The network destinations a client config names for one server: in its arguments and env
values, as URLs (``https://ghe.acme.com``), DSNs (``postgresql://reader@db.internal:5432/app``
-> ``db.internal:5432``) or ``host:port`` words. They are the only egress an import allows: a
catalog's example or default host is never one of them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcpspec.importer.references import secret_shaped
from mcpspec.spec.patterns import EGRESS_PATTERN

# The port a scheme means when its URL names none.
DEFAULT_PORTS = {
    "http": 80, "https": 443, "ws": 80, "wss": 443, "postgres": 5432, "postgresql": 5432, "mysql": 3306, "mariadb": 3306,
    "redis": 6379, "rediss": 6379, "mongodb": 27017, "amqp": 5672, "amqps": 5671, "nats": 4222, "ldap": 389, "ldaps": 636,
    "ftp": 21, "sftp": 22, "ssh": 22, "smtp": 25, "smtps": 465, "mssql": 1433, "sqlserver": 1433, "clickhouse": 9000,
    "cassandra": 9042, "neo4j": 7687, "bolt": 7687, "elasticsearch": 9200, "kafka": 9092, "imap": 143, "imaps": 993,
}
_URL = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*)://([^/\s?#\"']+)")
_HOST_PORT = re.compile(r"^(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+:\d{1,5}$|^\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}$")
_EGRESS = re.compile(EGRESS_PATTERN)


@dataclass
class Destinations:
    """Egress entries (``host:port``) in the order found, and what names a host an entry cannot hold."""

    allow: list[str] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)

    def add(self, entry: str) -> None:
        if _local(entry.rsplit(":", 1)[0].strip("[]")):
            self.cannot(entry)  # a bind address or the host's own services, not a destination to open on purpose
        elif _EGRESS.match(entry):
            if entry not in self.allow:
                self.allow.append(entry)
        else:
            self.cannot(entry)

    def cannot(self, what: str) -> None:
        if secret_shaped(what):
            return  # named in a comment: never a value shaped like a credential
        if what not in self.unusable:
            self.unusable.append(what)


def _local(host: str) -> bool:
    """Whether ``host`` is this machine, every address, link-local (cloud metadata) or multicast."""
    if host == "localhost" or host.endswith((".localhost", ".local")) or host in ("metadata.google.internal", "metadata.goog", "metadata"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # [::ffff:127.0.0.1] is 127.0.0.1 to a dual-stack socket
    return address.is_loopback or address.is_unspecified or address.is_link_local or address.is_multicast


def destinations(values: Iterable[str]) -> Destinations:
    """The destinations named in ``values`` (arguments, env values, as the client wrote them)."""
    found = Destinations()
    for value in values:
        for scheme, netloc in _URL.findall(value):
            if "${" in netloc or netloc.startswith("$"):
                continue  # an interpolation: the host is not known here
            if "\\" in netloc:
                # WHATWG parsers (node, browsers) read a backslash as "/", RFC 3986 ones as part of the
                # authority: https://good.example\@evil.example is good.example to one, evil.example to the other.
                found.cannot(f"{scheme}://{netloc}")
                continue
            host_port = netloc.rsplit("@", 1)[-1]
            for one in host_port.split(","):  # postgresql://a:5432,b:5432/db
                _add_netloc(found, scheme.lower(), one)
        word = value.strip()
        if "://" not in word:
            for piece in re.split(r"[\s=,;]+", word):
                if _HOST_PORT.match(piece):
                    found.add(piece.lower())
    return found


def _add_netloc(found: Destinations, scheme: str, netloc: str) -> None:
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port = rest.removeprefix(":")
        bracketed = True
    else:
        host, _, port = netloc.partition(":")
        bracketed = False
    if not host or scheme in ("file", "unix", "npipe", "pipe"):
        return
    if not port:
        default = DEFAULT_PORTS.get(scheme)
        if default is None:
            found.cannot(f"{scheme}://{netloc}")
            return
        port = str(default)
    found.add(f"[{host.lower()}]:{port}" if bracketed else f"{host.lower()}:{port}")
