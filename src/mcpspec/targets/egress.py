"""Egress policy shared by the targets: which entries need a proxy, and the squid
configuration that enforces an allowlist.

Squid is the filtering proxy (Debian's package). Its rules, in order:

0. only http:// and https:// URLs and CONNECT pass: squid's manager (``cache_object://``
   and ``/squid-internal-mgr/``), its internal pages (``/squid-internal-*``, on any
   host), TRACE (which squid answers itself) and every other scheme (ftp, gopher,
   wais, whois, urn...) are refused before anything else, and the manager's actions
   are disabled besides;
1. a request for a name the spec does not list is refused before any DNS lookup;
2. metadata names and the addresses no spec may reach (``never`` in
   ``mcpspec.addresses``: metadata, "this host" ``0.0.0.0/8`` and ``::``, the
   IPv6 forms that carry an IPv4 address) are refused, whatever the spec says
   (checked on every address a name resolves to, so DNS rebinding does not slip past);
3. the spec's ``deny`` entries are refused;
4. the spec's address entries (CIDR, IP:port) are allowed on their ports, for
   requests that name the address (a name that resolves to it goes on to 5);
5. the other special-purpose ranges (loopback, private, link-local, documentation...)
   and, where the proxy shares the host's network namespace, the host's own
   addresses (ACL ``host_addresses``, which the launcher or unit defines at start)
   are refused after resolution; with ``deny`` holding loopback (``@private``,
   ``@loopback``), the host's own addresses are refused at 3 already;
6. the spec's names are allowed on their ports (``*.example.com`` matches
   subdomains only, never the apex);
7. everything else is refused, unless the spec's default is ``allow``.

ACL values are written one per line: squid reads a configuration line in pieces
of 8 KiB, so a longer line would continue as a line of its own.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from mcpspec.addresses import METADATA_HOSTS, METADATA_NETWORKS, NEVER_NETWORKS, REFUSED_NETWORKS, squid_form
from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.presets import PRIVATE
from mcpspec.spec.values import Destination
from mcpspec.targets.comments import comment_line
from mcpspec.targets.escape import Unrepresentable

LINK_LOCAL = ipaddress.ip_network("169.254.0.0/16")
# Addresses every target refuses, even where only IP rules are available (systemd's IPAddressDeny=).
METADATA_RANGES = ("169.254.0.0/16", *(str(n) for n in METADATA_NETWORKS if not (n.version == 4 and n.subnet_of(LINK_LOCAL))))  # type: ignore[arg-type]
# The @private preset: the same ranges NW003 checks and `deny: ["@private"]` refuses.
PRIVATE_RANGES = tuple(str(n) for n in PRIVATE.networks)
SQUID_NEVER = squid_form(NEVER_NETWORKS)
SQUID_REFUSED = squid_form(REFUSED_NETWORKS)
# squid reads a configuration file in pieces of BUFSIZ (8192) bytes, newline included.
SQUID_LINE_MAX = 8000
_DOMAIN_TEXT = re.compile(r"^[a-z0-9.-]+\Z")  # \Z: "$" would also match before a final newline
_SQUID_WORD = re.compile(r"^[A-Za-z0-9_@+=:,./-]{1,4000}\Z")


def squid_word(value: str) -> str:
    """One word of a squid.conf directive that a launcher adds (a path, an address).

    Refused unless plain: squid splits a line on whitespace, reads a quoted word as
    a file to include, expands ``${...}`` and reads a line in 8 KiB pieces.
    """
    if not _SQUID_WORD.match(value):
        raise Unrepresentable(f"{value!r} cannot be written in squid.conf safely (only letters, digits and _@+=:,./- are allowed)")
    return value


@dataclass(frozen=True, slots=True)
class EgressPlan:
    """What one server's egress needs from a target."""

    mode: str  # "none" (no network at all), "proxy" (allowlist through squid), "direct-open" (host network)
    allow: tuple[Destination, ...]
    deny: tuple[Destination, ...]
    default: str


def egress_plan(sandbox: EffectiveSandbox) -> EgressPlan:
    egress = sandbox.egress
    if egress.default == "deny" and not egress.allow:
        mode = "none"
    else:
        mode = "proxy" if egress.via == "proxy" else "direct-open"
    return EgressPlan(mode, egress.allow, egress.deny, egress.default)


def _domain_acl(destination: Destination) -> tuple[str, str]:
    """(acl type, value) for a name entry; names are validated to [a-z0-9.-]."""
    host = destination.host.removeprefix("*.")
    if not _DOMAIN_TEXT.match(host):  # the spec's validator guarantees this; stay closed if it ever changes
        raise ValueError(f"unexpected characters in {destination.text!r}")
    if destination.kind == "wildcard":
        return "dstdom_regex -n -i", "^([a-z0-9-]+\\.)+" + re.escape(host).replace("\\-", "-") + "$"
    return "dstdomain -n", host


def _cidr(destination: Destination) -> str:
    return str(ipaddress.ip_network(destination.host, strict=False))


# Rule 0: what squid would answer itself, or fetch by a protocol other than HTTP.
# ``manager`` and ``CONNECT`` are squid's predefined ACLs; CONNECT carries no URL scheme.
SQUID_ONLY_WEB = (
    "http_access deny manager",
    "acl squid_internal urlpath_regex ^/squid-internal-",
    "http_access deny squid_internal",
    "acl web_scheme proto HTTP HTTPS",
    "http_access deny !web_scheme !CONNECT",
    # squid answers a TRACE with Max-Forwards: 0 itself, echoing the request.
    "acl trace_method method TRACE",
    "http_access deny trace_method",
)
# The ACL of the host's own addresses: defined by the launcher (bwrap) or read from a file
# written at start (systemd), never in the generated rules, which hold only its use. Beside
# it, PORT_ACL holds squid's own port (the launcher's choice, or the unit's), so a request
# addressed to squid itself is refused whatever address entry covers the host.
HOST_ACL = "host_addresses"
PORT_ACL = "proxy_port"


def squid_rules(plan: EgressPlan, host_addresses: bool = False) -> list[str]:
    """The ACL and http_access lines (the part of squid.conf that is policy).

    With ``host_addresses`` the rules refuse the ACL of that name (the proxy runs in the
    host's network namespace; whoever starts it defines the ACL from the host's addresses,
    and PORT_ACL from squid's port).
    """
    names = [d for d in plan.allow if d.kind != "cidr"]
    addresses = [d for d in plan.allow if d.kind == "cidr"]
    lines = [*SQUID_ONLY_WEB, "acl ip_literal dstdom_regex -n ^[0-9.]+$ ^\\[[0-9a-fA-F:.]+\\]$"]
    if plan.default == "deny":
        listed = []
        for index, destination in enumerate(names, 1):
            kind, value = _domain_acl(destination)
            lines.append(f"acl listed_{index} {kind} {value}")
            listed.append(f"!listed_{index}")
        lines.append(" ".join(["http_access deny !ip_literal", *listed]))
    if host_addresses:
        # The port first: HOST_ACL is a dst ACL, which resolves the request's name, and only a
        # request for squid's own port needs that (a flood of names sent none to a resolver).
        lines.append(f"http_access deny {PORT_ACL} {HOST_ACL}")
    lines.extend(_acl("metadata_names", "dstdomain -n", METADATA_HOSTS))
    lines.append("http_access deny metadata_names")
    lines.extend(_acl("never", "dst", SQUID_NEVER))
    lines.append("http_access deny never")
    # Without nested ranges (presets overlap: @private holds 169.254.0.0/16, @metadata its addresses),
    # which squid warns about, and without the IPv4-mapped block, which would refuse every IPv4 address.
    denied_addresses = squid_form(tuple(ipaddress.ip_network(_cidr(d)) for d in plan.deny if d.kind == "cidr"))
    if denied_addresses:
        lines.extend(_acl("spec_denied", "dst", denied_addresses))
        lines.append("http_access deny spec_denied")
    if host_addresses and any(_denies_loopback(d) for d in plan.deny):
        lines.append(f"http_access deny {HOST_ACL}")
    for index, destination in enumerate((d for d in plan.deny if d.kind != "cidr"), 1):
        kind, value = _domain_acl(destination)
        lines.append(f"acl spec_denied_name_{index} {kind} {value}")
        lines.extend(_port_rule(f"spec_denied_name_{index}", destination.port, "deny"))
    for index, destination in enumerate(addresses, 1):
        # Literal requests only (-n: no lookup, a name never matches): a name with several
        # addresses matches dst when any one of them is listed, and squid may then connect
        # to another one (127.0.0.1, say).
        lines.append(f"acl address_{index} dst -n {_cidr(destination)}")
        lines.extend(_port_rule(f"address_{index}", destination.port, "allow", "ip_literal"))
    lines.extend(_acl("refused", "dst", SQUID_REFUSED))
    lines.append("http_access deny refused")
    if host_addresses:
        lines.append(f"http_access deny {HOST_ACL}")
    for index, destination in enumerate(names, 1):
        kind, value = _domain_acl(destination)
        lines.append(f"acl name_{index} {kind} {value}")
        lines.extend(_port_rule(f"name_{index}", destination.port, "allow"))
    lines.append("http_access allow all" if plan.default == "allow" else "http_access deny all")
    return lines


def _denies_loopback(destination: Destination) -> bool:
    """A deny entry that refuses the host's own services (``@private``, ``@loopback``, 127.0.0.0/8...)."""
    return destination.kind == "cidr" and destination.port is None and ipaddress.ip_address("127.0.0.1") in ipaddress.ip_network(_cidr(destination))


def _acl(name: str, kind: str, values: Iterable[str]) -> list[str]:
    return [f"acl {name} {kind} {value}" for value in values]


def _port_rule(acl: str, port: int | None, verdict: str, also: str = "") -> list[str]:
    first = f"http_access {verdict} {also + ' ' if also else ''}{acl}"
    if port is None:
        return [first]
    return [f"acl {acl}_port port {port}", f"{first} {acl}_port"]


# Settings every generated squid.conf carries: no disk cache, no ICMP pinger, a
# quick shutdown, and an access log naming each destination (URL-encoded, so a
# hostile host name cannot forge log fields).
SQUID_BASE = (
    "cache deny all",
    "pinger_enable off",
    "shutdown_lifetime 1 seconds",
    "visible_hostname mcpspec-egress",
    "forwarded_for delete",
    "httpd_suppress_version_string on",
    "cachemgr_passwd disable all",
    "global_internal_static off",
    "logformat mcpspec %ts %Ss/%03>Hs %rm %#>rd %>rP %>rs",
)


def squid_config(plan: EgressPlan, header: Iterable[str], runtime: Iterable[str], host_addresses: bool = False) -> str:
    """A complete squid.conf: a comment header (plain text, written through comment_line),
    runtime lines (port, files), the base and the rules (``host_addresses``: see squid_rules).

    Raises Unrepresentable for a line squid would split (only a runtime line can be that long).
    """
    lines = [comment for text in header for comment in _folded(comment_line(text))]
    lines.extend(runtime)
    lines.extend(SQUID_BASE)
    lines.extend(squid_rules(plan, host_addresses))
    for line in lines:
        if len(line.encode()) > SQUID_LINE_MAX or "\n" in line or "\r" in line:
            raise Unrepresentable(f"squid cannot read a configuration line of {len(line.encode())} bytes safely: {line[:60]!r}...")
    return "\n".join(lines) + "\n"


def _folded(comment: str) -> list[str]:
    """A comment line cut into comment lines squid reads whole (a long file name can make one longer)."""
    out: list[str] = []
    while len(comment.encode()) > SQUID_LINE_MAX:
        cut = SQUID_LINE_MAX // 4  # characters: at most 4 bytes each in UTF-8
        out.append(comment[:cut])
        comment = "# " + comment[cut:]
    return [*out, comment]
