"""Read back what a squid.conf lets through: the allow rules, the denials ahead of
them, and the verdict for everything else.

Squid checks ``http_access`` lines in order and acts on the first that matches; a
line matches when every ACL on it does (``!`` negates one), an ACL when any of its
values does. With no line matching, squid does the opposite of the last line. This
reader follows those rules over the ACL types a generated file uses (``dstdomain``,
``dstdom_regex`` in the one form the generator writes, ``dst``, ``port``; a ``dst``
read from a file is unknown) and reads anything else as a wildcard, so what it reports is never narrower than what squid does.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from mcpspec.targets.grants import ANY, EgressGrant, Endpoint

# ``*.example.com`` as the generator writes it: subdomains, never the apex.
_QUOTED_FILE = re.compile(r'^"/[A-Za-z0-9_./-]+"$')
_WILDCARD = re.compile(r"^\^\(\[a-z0-9-\]\+\\\.\)\+((?:[a-z0-9-]|\\\.)+)\$$")


@dataclass(frozen=True, slots=True)
class _Acl:
    kind: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Rule:
    allow: bool
    acls: tuple[tuple[bool, str], ...]  # (negated, name)


def parse(text: str) -> tuple[dict[str, list[_Acl]], list[_Rule], bool]:
    """ACLs by name, the http_access rules in order, and whether every line was understood."""
    acls: dict[str, list[_Acl]] = {}
    rules: list[_Rule] = []
    plain = True
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if len(words) == 4 and words[0] == "acl" and words[2] == "dst" and _QUOTED_FILE.match(words[3]) and "${" not in line:
            # Addresses read from a file at start (the host's own): unknown here, so wide in an
            # allow rule and refusing nothing that can be named in a deny rule.
            acls.setdefault(words[1], []).append(_Acl("dst", (words[3],)))
            continue
        if '"' in line or "${" in line or line.startswith("include"):
            plain = False  # a quoted word names a file to include; ${...} expands
            continue
        if words[0] == "acl" and len(words) >= 3:
            name, kind, *rest = words[1:]
            values = tuple(word for word in rest if not word.startswith("-"))
            acls.setdefault(name, []).append(_Acl(kind, values))
        elif words[0] == "http_access" and len(words) >= 3 and words[1] in ("allow", "deny"):
            rules.append(_Rule(words[1] == "allow", tuple((w.startswith("!"), w.removeprefix("!")) for w in words[2:])))
        elif words[0] == "http_access":
            plain = False
    return acls, rules, plain


def read_squid(text: str) -> EgressGrant:
    """The egress a proxy with this configuration grants (mode ``proxy``)."""
    acls, rules, plain = parse(text)
    allow: set[Endpoint] = set() if plain else {ANY}
    deny: set[Endpoint] = set()
    default: str | None = None
    seen_allow = False
    for rule in rules:
        names = [name for _, name in rule.acls]
        if names == ["all"]:
            default = "allow" if rule.allow else "deny"
            break
        if rule.allow:
            seen_allow = True
            allow.update(_endpoints(rule, acls))
        elif not seen_allow and not any(negated for negated, _ in rule.acls):
            deny.update(_endpoints(rule, acls, narrow=True))
    if default is None:
        default = "deny" if not rules or rules[-1].allow else "allow"
    if default == "allow":
        allow.add(ANY)
    return EgressGrant("proxy", "allow" if default == "allow" else "deny", frozenset(allow), frozenset(deny))


def _endpoints(rule: _Rule, acls: dict[str, list[_Acl]], narrow: bool = False) -> set[Endpoint]:
    """What one rule matches, as endpoints. Wide (``ANY``) where unsure, unless ``narrow``
    (for a deny rule, where unsure means it refuses nothing that can be named)."""
    hosts: list[Endpoint] | None = None
    ports: list[int | None] | None = None
    for negated, name in rule.acls:
        definitions = acls.get(name)
        if name == "ip_literal" and not negated:
            continue  # only narrows an allow (literal requests), and never widens a deny
        if negated or not definitions:
            if narrow:
                return set()
            continue  # a negated ACL only narrows an allow rule: ignore it
        kinds = {d.kind for d in definitions}
        values = [v for d in definitions for v in d.values]
        if kinds == {"port"}:
            found_ports = [_port(v) for v in values]
            ports = found_ports if ports is None else [p for p in ports if p in found_ports]
            continue
        found = [endpoint for d in definitions for v in d.values for endpoint in _host(d.kind, v)]
        if any(e == ANY for e in found) and narrow:
            return set()
        hosts = found if hosts is None else hosts + found
    if hosts is None:
        if narrow:
            return set()
        hosts = [ANY]
    return {Endpoint(h.kind, h.host, p) for h in hosts for p in (ports or [None])}


def _port(value: str) -> int | None:
    return int(value) if value.isdigit() else None  # a range: every port, to stay wide


def _host(kind: str, value: str) -> list[Endpoint]:
    if kind == "dstdomain":
        if value.startswith("."):  # the name and every subdomain
            return [Endpoint("domain", value[1:].lower()), Endpoint("wildcard", "*" + value.lower())]
        return [Endpoint("domain", value.lower())]
    if kind == "dstdom_regex":
        match = _WILDCARD.match(value)
        return [Endpoint("wildcard", "*." + match.group(1).replace("\\.", "."))] if match else [ANY]
    if kind == "dst":
        try:
            return [Endpoint("cidr", str(ipaddress.ip_network(value, strict=False)))]
        except ValueError:
            return [ANY]
    return [ANY]
