"""Named destination sets for `egress.allow` and `egress.deny`: `@metadata`, `@private`, ...

One table, built from :mod:`mcpspec.addresses`: the resolver expands a preset
into its destinations in the Plan (so every target enforces exactly them), the
network rules check a policy against the same sets (so `deny: [@metadata]` is
exactly what NW001 asks for), and `mcpspec explain @metadata` and the docs list
them from here.
"""

from __future__ import annotations

import difflib
import ipaddress
from dataclasses import dataclass

from mcpspec.addresses import METADATA_HOSTS, METADATA_NETWORKS, PRIVATE_NETWORKS, SPECIAL_RANGES, IPNetwork
from mcpspec.spec.values import Destination, parse_destination

PREFIX = "@"
# An IPv4-mapped block in a deny list would refuse every IPv4 destination to squid, which
# checks a mapped address as the IPv4 it carries: the IPv4 ranges already cover it.
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


@dataclass(frozen=True, slots=True)
class Preset:
    """A named set of destinations, every port of each."""

    name: str
    summary: str
    networks: tuple[IPNetwork, ...]
    hosts: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        """How a spec writes it: ``@metadata``."""
        return PREFIX + self.name

    def destinations(self) -> tuple[Destination, ...]:
        """The egress entries it stands for, in the Plan: CIDRs, then host names, each on every port."""
        cidrs = tuple(Destination("cidr", str(network), None, str(network), preset=self.name) for network in self.networks)
        names = tuple(Destination("domain", host, None, f"{host}:*", preset=self.name) for host in self.hosts)
        return cidrs + names

    def items(self) -> list[str]:
        """Every address range and host name, as a listing shows them."""
        return [str(network) for network in self.networks] + list(self.hosts)


@dataclass(frozen=True, slots=True)
class PresetRef:
    """An egress entry that names a preset (``@private``), as the spec model holds it before resolution."""

    name: str
    text: str

    @property
    def preset(self) -> Preset:
        return PRESETS[self.name]

    def __str__(self) -> str:
        return self.text


def _networks(*texts: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(text) for text in texts)


def _ranges(*names: str) -> tuple[IPNetwork, ...]:
    return tuple(r.network for r in SPECIAL_RANGES if r.name in names)


# A deny entry needs a dotted name, so single-label hosts (instance-data) are left out; they
# resolve through the search domain to a dotted name that is on the list.
METADATA = Preset(
    "metadata",
    "cloud and container metadata endpoints: the addresses and names that hand out the machine's credentials",
    METADATA_NETWORKS,
    tuple(host for host in METADATA_HOSTS if "." in host),
)
PRIVATE = Preset(
    "private",
    "every range that is the host's or its networks' own: RFC 1918, CGNAT, loopback, link-local, "
    "unique-local, 'this host', multicast, reserved and the IPv6 forms that carry an IPv4 address",
    tuple(network for network in PRIVATE_NETWORKS if network != _MAPPED),
)
LOOPBACK = Preset("loopback", "the host's own services: 127.0.0.0/8 and ::1", _networks("127.0.0.0/8", "::1/128"))
LINK_LOCAL = Preset("link-local", "the link's devices and the metadata services on it: 169.254.0.0/16 and fe80::/10", _networks("169.254.0.0/16", "fe80::/10"))
RFC1918 = Preset("rfc1918", "the private-use IPv4 ranges of RFC 1918: 10/8, 172.16/12, 192.168/16", _networks("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
CGNAT = Preset("cgnat", "the shared address space of RFC 6598 (carrier-grade NAT, Alibaba's metadata): 100.64.0.0/10", _ranges("Shared Address Space (CGNAT, RFC 6598)"))
ULA = Preset("ula", "IPv6 unique-local addresses (AWS and GCP metadata answer here): fc00::/7", _ranges("Unique-Local"))

PRESETS: dict[str, Preset] = {preset.name: preset for preset in (METADATA, PRIVATE, LOOPBACK, LINK_LOCAL, RFC1918, CGNAT, ULA)}
# Names are [a-z0-9-], written unescaped: ECMA regexes in unicode mode refuse an escaped hyphen.
PATTERN = "^@(" + "|".join(PRESETS) + ")$"


def parse_egress_entry(value: object) -> Destination | PresetRef:
    """An egress entry: a destination (see :func:`parse_destination`) or ``@name`` of a preset."""
    if isinstance(value, str) and value.strip().startswith(PREFIX):
        return parse_preset(value.strip())
    return parse_destination(value)


def parse_preset(text: str) -> PresetRef:
    name = text.removeprefix(PREFIX)
    if name in PRESETS:
        return PresetRef(name, text)
    if ":" in name and name.split(":", 1)[0] in PRESETS:
        raise ValueError(f"{text!r}: a preset covers every port; write '{PREFIX}{name.split(':', 1)[0]}'")
    close = difflib.get_close_matches(name, list(PRESETS), n=1, cutoff=0.6)
    hint = f"did you mean '{PREFIX}{close[0]}'? " if close else ""
    known = ", ".join(preset.ref for preset in PRESETS.values())
    raise ValueError(f"no destination preset is named {text!r}; {hint}presets: {known} (mcpspec explain @<name> lists one)")


def find(name: str) -> Preset | None:
    """The preset ``@name`` or ``name`` names, if any."""
    return PRESETS.get(name.removeprefix(PREFIX))


def explain(preset: Preset) -> str:
    """Markdown for `mcpspec explain @name`: what it covers, every entry."""
    lines = [f"# {preset.ref}", "", f"Destination preset: {preset.summary}.", "", listing(preset)]
    return "\n".join(lines)


def listing(preset: Preset) -> str:
    """Every entry of a preset as a Markdown list."""
    entries = [f"- `{network}`" for network in preset.networks] + [f"- `{host}` (a name: refused through the proxy, `via: proxy`)" for host in preset.hosts]
    return "\n".join(entries) + "\n"


def doc_section(name: str) -> str:
    """A rule-doc section listing one preset in full."""
    preset = PRESETS[name]
    return f'\n## The {preset.ref} preset\n`egress.deny: ["{preset.ref}"]` refuses every one of these, on every port; `mcpspec explain {preset.ref}` prints them.\n\n{listing(preset)}'


def explain_all() -> str:
    """Markdown listing every preset (``mcpspec explain @``)."""
    out = ["# Destination presets", "", "Write one in `egress.allow` or `egress.deny`; it stands for every entry listed, on every port.", ""]
    for preset in PRESETS.values():
        out += [f"## {preset.ref}", "", f"{preset.summary[0].upper()}{preset.summary[1:]}.", "", listing(preset)]
    return "\n".join(out)
