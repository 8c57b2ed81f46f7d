"""Where `mcpspec run` may connect for a remote server, checked at connect time.

The spec's URL is parsed once into an ``Endpoint``. Each connection resolves the host name, checks
every address it resolves to against the special-purpose table of ``mcpspec.addresses`` (loopback,
private, link-local, unique-local, metadata, the IPv6 forms that carry an IPv4 address, IPv4-mapped
ones checked as IPv4), and then connects a socket to the very address it checked: a name whose
answer changes between the check and the connection (DNS rebinding) cannot reach another address.

Plain http is refused unless the URL's host is itself a loopback IP literal; only then is that one
loopback address reachable. A name that resolves to loopback is refused like any other special
address (a name is not the user's word that the server is on this machine).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcpspec.addresses import METADATA_HOSTS, NEVER_NETWORKS, REFUSED_NETWORKS, SPECIAL_RANGES

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses the name resolves to, as text. Tests replace it (never /etc/hosts).
Resolver = Callable[[str, int], Awaitable[list[str]]]
CONNECT_TIMEOUT = 10.0


class RemoteRefused(Exception):
    """The remote server's URL, or an address it resolves to, is one `mcpspec run` does not reach."""


@dataclass(frozen=True)
class Endpoint:
    """A remote server's URL, parsed: where to connect and what to send in the request line."""

    scheme: str  # "https", or "http" for a loopback literal
    host: str  # lower-case name or IP literal (no brackets)
    port: int
    target: str  # path and query, what the request line names
    literal: IPAddress | None  # the host when it is an IP literal

    @property
    def authority(self) -> str:
        """The Host header: the host (bracketed when IPv6) and the port when not the scheme's default."""
        host = f"[{self.host}]" if self.literal is not None and self.literal.version == 6 else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def canonical(self) -> str:
        """The URL in canonical form (RFC 8707 ``resource``): lower-case scheme and host, no default port, no fragment."""
        return f"{self.scheme}://{self.authority}{self.target}"

    @property
    def loopback_literal(self) -> bool:
        return self.literal is not None and _unmapped(self.literal).is_loopback


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _unmapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def parse_endpoint(url: str) -> Endpoint:
    """``url`` as an Endpoint; RemoteRefused when `mcpspec run` would never connect to it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RemoteRefused(f"the URL {url!r} cannot be parsed: {exc}") from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower().rstrip(".")
    if scheme not in _DEFAULT_PORTS or not host:
        raise RemoteRefused(f"the URL {url!r} is not an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise RemoteRefused("the URL carries a user name or password: give the credential as the server's secret")
    if parts.fragment:
        raise RemoteRefused("the URL has a fragment (#...), which names no resource on the server")
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    endpoint = Endpoint(scheme, host, port or _DEFAULT_PORTS[scheme], (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), literal)
    if any(ord(char) < 0x21 or ord(char) > 0x7E for char in endpoint.target + endpoint.host):
        raise RemoteRefused("the URL holds spaces, control or non-ASCII characters: write them percent-encoded")
    if scheme == "http" and not endpoint.loopback_literal:
        raise RemoteRefused(f"plain http to {host} is refused: only https is used, but for a loopback address written as such (127.0.0.1, [::1])")
    if host in METADATA_HOSTS:
        raise RemoteRefused(f"{host} is a cloud metadata service")
    return endpoint


def address_refusal(address: IPAddress, endpoint: Endpoint) -> str | None:
    """Why a connection to ``address`` for ``endpoint`` is refused, or None when it may be made."""
    checked = _unmapped(address)
    if endpoint.loopback_literal and endpoint.literal is not None and checked == _unmapped(endpoint.literal):
        return None  # the spec names this loopback address itself
    for network in NEVER_NETWORKS + REFUSED_NETWORKS:
        if network.version == checked.version and checked in network:
            names = [r.name for r in SPECIAL_RANGES if r.network == network]
            shown = f"{address} ({checked})" if checked != address else str(address)
            return f"{shown} is in {network} ({names[0] if names else 'a cloud metadata endpoint'})"
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address of ``host``, both families, as the system resolves it."""
    loop = asyncio.get_running_loop()
    found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


RESOLVER: Resolver = system_resolver  # the seam tests replace in the process they start


async def checked_addresses(endpoint: Endpoint, resolver: Resolver | None = None) -> list[IPAddress]:
    """The addresses to connect to for ``endpoint``; RemoteRefused when any is refused (a name that
    mixes a public and a private address is refused whole)."""
    if endpoint.literal is not None:
        found: list[IPAddress] = [endpoint.literal]
    else:
        try:
            texts = await asyncio.wait_for((resolver or RESOLVER)(endpoint.host, endpoint.port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise RemoteRefused(f"cannot resolve {endpoint.host}: {exc}") from None
        try:
            found = [ipaddress.ip_address(text.split("%", 1)[0]) for text in texts]
        except ValueError as exc:
            raise RemoteRefused(f"{endpoint.host} resolved to something that is not an address: {exc}") from None
    if not found:
        raise RemoteRefused(f"{endpoint.host} resolves to no address")
    for address in found:
        why = address_refusal(address, endpoint)
        if why is not None:
            raise RemoteRefused(f"{endpoint.host} resolves to a refused address: {why}")
    return found


async def connect(endpoint: Endpoint, resolver: Resolver | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection (TLS for https, verified against the host name) to a checked address of ``endpoint``."""
    loop = asyncio.get_running_loop()
    failures: list[str] = []
    for address in await checked_addresses(endpoint, resolver):
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, (str(address), endpoint.port)), CONNECT_TIMEOUT)
            if ipaddress.ip_address(sock.getpeername()[0]) != address:
                raise OSError("connected to another address than the one checked")
            context = ssl.create_default_context() if endpoint.scheme == "https" else None
            server_name = endpoint.host if context is not None else None  # an IP literal is checked against the certificate's IP entries
            return await asyncio.wait_for(
                asyncio.open_connection(sock=sock, ssl=context, server_hostname=server_name, limit=2**16), CONNECT_TIMEOUT
            )  # fmt: skip
        except (OSError, TimeoutError) as exc:
            sock.close()
            failures.append(f"{address}: {exc or type(exc).__name__}")
    raise ConnectionError(f"cannot connect to {endpoint.authority}: {'; '.join(failures)}")
