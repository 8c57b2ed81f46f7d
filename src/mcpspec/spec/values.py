"""Parsers for the scalar value forms of the language: durations, sizes, names,
paths and egress destinations. Each raises ValueError with a message meant for
the user; pydantic places it at the value's position."""

from __future__ import annotations

import functools
import ipaddress
import posixpath
import re
from dataclasses import dataclass, field
from typing import Literal

from mcpspec.perf import quick_init

NAME_PATTERN = r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
DIR_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
# For the JSON Schema: a duration is more than no time, a size at least one byte.
DURATION_PATTERN = r"^(?=.*[1-9])([0-9]+(ms|s|m|h|d))+$"
SIZE_PATTERN = r"^0*[1-9][0-9]*(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T|B)$"
# A secret's ttl: a duration, or `none` for a credential that does not expire.
TTL_PATTERN = r"^(none|(?=.*[1-9])([0-9]+(ms|s|m|h|d))+)$"
NONE: Literal["none"] = "none"

_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d)")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|K|M|G|T|B)\Z")
_SIZE_UNITS = {"B": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
               "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_NAME = re.compile(NAME_PATTERN)
_DOMAIN = re.compile(r"([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")
_FORBIDDEN_PATH_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_ADDRESS_CHARS = re.compile(r"[0-9./]+")


def parse_duration(value: object) -> float:
    """``15m`` -> 900.0 seconds; ``1h30m`` and ``250ms`` work too. A bare number is refused."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"a duration is a string such as '15m', not {type(value).__name__}")
    if not isinstance(value, str):
        raise ValueError(f"a duration needs a unit: write '{value}s' for seconds (units: ms, s, m, h, d)")
    text = value.strip()
    if not text or _DURATION_PART.sub("", text):
        raise ValueError(f"{value!r} is not a duration; write e.g. '30s', '15m', '1h30m', '7d'")
    seconds = float(sum(int(n) * _DURATION_UNITS[unit] for n, unit in _DURATION_PART.findall(text)))
    if seconds <= 0:  # a limit of no time would read as "no limit" to every target that rounds it
        raise ValueError(f"{value!r} is no time at all; leave the field out for no limit")
    return seconds


def parse_size(value: object) -> int:
    """``512Mi`` -> 536870912 bytes; binary (Ki, Mi, Gi, Ti) and decimal (K, M, G, T) units, or B."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"a size is a string such as '512Mi', not {type(value).__name__}")
    if not isinstance(value, str):
        raise ValueError(f"a size needs a unit: write '{value}Mi' or '{value}B' (units: B, K, M, G, T, Ki, Mi, Gi, Ti)")
    match = _SIZE.match(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a size; write e.g. '256Mi', '1Gi', '500M'")
    number, unit = match.groups()
    size = int(float(number) * _SIZE_UNITS[unit])
    if size <= 0:
        raise ValueError(f"size {value!r} must be greater than zero")
    return size


def parse_ttl(value: object) -> float | Literal["none"]:
    """A secret's ttl: ``none`` (it never expires, said on purpose) or a duration in seconds."""
    if value == NONE:
        return NONE
    if isinstance(value, str) and not any(char.isdigit() for char in value):  # a word: never, forever, infinite
        raise ValueError(f"{value!r} is not a ttl: write a duration such as '1h' or '30d', or 'none' for a credential that does not expire")
    return parse_duration(value)


def parse_scopes(value: object) -> list[str] | Literal["none"]:
    """A secret's scopes: a list of non-empty strings, or ``none`` (it has no scopes, said on purpose)."""
    if value == NONE:
        return NONE
    if not isinstance(value, list):
        shown = repr(value) if isinstance(value, str) else type(value).__name__
        raise ValueError(f"scopes is a list such as [issues:read], or 'none' for a credential that has no scopes, not {shown}")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"each scope is a non-empty string, not {item!r}")
    if NONE in value:
        raise ValueError("'none' says the credential has no scopes: write 'scopes: none' alone, not inside a list")
    return list(value)


def check_name(value: str, what: str = "name") -> str:
    """Names of servers, agents, secrets and projects become file, unit and Kubernetes names."""
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} is not allowed: use 1-40 lowercase letters, digits and '-', "
            "starting with a letter and not ending with '-' (it becomes file, unit and Kubernetes names)"
        )
    return value


@functools.lru_cache(maxsize=4096)
def normalize_sandbox_path(value: str) -> str:
    """An absolute path inside a sandbox, normalized; ``..`` segments are refused."""
    _check_path_text(value)
    if not value.startswith("/"):
        raise ValueError(f"path {value!r} must be absolute (start with '/')")
    if ".." in value.split("/"):
        raise ValueError(f"path {value!r} must not contain '..'")
    return posixpath.normpath(value).replace("//", "/")


def normalize_host_path(value: str) -> str:
    """A host path: absolute or under the user's home (``~/``); normalized, ``..`` refused."""
    _check_path_text(value)
    if value == "~" or value.startswith("~/"):
        rest = value[1:] or "/"
        if ".." in rest.split("/"):
            raise ValueError(f"path {value!r} must not contain '..'")
        normalized = posixpath.normpath(rest).replace("//", "/")
        return "~" if normalized == "/" else "~" + normalized
    if not value.startswith("/"):
        raise ValueError(
            f"host path {value!r} must be absolute, start with '~/', or name a workspace dir as 'workspace.<dir>'"
        )
    return normalize_sandbox_path(value)


def _check_path_text(value: str) -> None:
    if not value:
        raise ValueError("path must not be empty")
    if _FORBIDDEN_PATH_CHARS.search(value):
        raise ValueError(f"path {value!r} contains a control character (newline, tab or NUL)")


@quick_init
@dataclass(frozen=True, slots=True)
class Destination:
    """One parsed egress entry.

    ``kind`` is ``domain`` (``api.example.com:443``), ``wildcard`` (``*.example.com:443``,
    which matches subdomains only, not the apex), or ``cidr`` (``10.0.0.0/8``,
    ``10.0.0.5:5432``, ``[fd00::1]:443``; a single address is a /32 or /128).
    ``port`` is None when every port is meant. ``preset`` names the preset
    (``@metadata``) an entry of the Plan was expanded from, if any.
    """

    kind: Literal["domain", "wildcard", "cidr"]
    host: str
    port: int | None
    text: str
    preset: str | None = field(default=None, compare=False)

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        if self.kind != "cidr":
            raise ValueError(f"{self.text} names a host, not an address")
        return _network(self.host)

    def __str__(self) -> str:
        return self.text


@functools.lru_cache(maxsize=4096)
def _network(host: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """A CIDR entry's network, parsed once per text: the network rules ask for it again and again
    (50,000 times for 10,000 servers); networks are immutable, so every entry may share one."""
    return ipaddress.ip_network(host, strict=False)


def parse_destination(value: object) -> Destination:
    """Parse ``host:port``, ``*.domain:port``, ``CIDR``, ``CIDR:port``, ``IP:port`` or ``[IPv6]:port``."""
    if not isinstance(value, str):
        raise ValueError(f"an egress entry is a string such as 'api.example.com:443', not {type(value).__name__}")
    return _parse_destination_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_destination_text(value: str) -> Destination:
    text = value.strip()
    if text in ("*", "*:*") or text.startswith("*:"):
        raise ValueError(f"{value!r} allows every host; say so with 'default: allow' instead of an allow entry")
    host, port_text = _split_port(text)
    port = _parse_port(port_text, text) if port_text is not None else None
    if _looks_like_address(host):
        try:
            network = ipaddress.ip_network(host, strict=False)
        except ValueError:
            raise ValueError(f"{value!r} is not a valid IP address or CIDR") from None
        return Destination("cidr", str(network), port, text)
    if port_text is None:
        raise ValueError(f"{value!r} needs a port: write '{host}:443', or '{host}:*' for every port")
    wildcard = host.startswith("*.")
    domain = host[2:] if wildcard else host
    _check_domain(domain, value)
    return Destination("wildcard" if wildcard else "domain", host.lower(), port, text)


def _split_port(text: str) -> tuple[str, str | None]:
    """Split off a ``:port`` suffix, returning the port's text (None when absent)."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ValueError(f"{text!r}: missing ']' after an IPv6 address")
        host, rest = text[1:close], text[close + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise ValueError(f"{text!r}: expected ':port' after ']'")
        return host, rest[1:]
    if text.count(":") > 1:  # a bare IPv6 address or CIDR, no port
        return text, None
    if ":" in text:
        host, port_text = text.rsplit(":", 1)
        return host, port_text
    return text, None


def _parse_port(port_text: str, text: str) -> int | None:
    if port_text == "*":
        return None
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: port {port_text!r} must be a number from 1 to 65535 or '*'")
    return int(port_text)


def _looks_like_address(host: str) -> bool:
    return ":" in host or _ADDRESS_CHARS.fullmatch(host) is not None


def _check_domain(domain: str, original: str) -> None:
    if "*" in domain:
        raise ValueError(f"{original!r}: a wildcard may only be the whole leftmost label, as in '*.example.com:443'")
    if len(domain) > 253 or not _DOMAIN.match(domain.lower()):
        raise ValueError(f"{original!r} is not a valid domain name with a dot, such as 'api.example.com:443'")
    if domain.rsplit(".", 1)[-1].isdigit():
        raise ValueError(f"{original!r}: the last label of a domain cannot be numeric")
