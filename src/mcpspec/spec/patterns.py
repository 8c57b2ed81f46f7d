"""Regular expressions that restate the value forms of the language for the JSON Schema.

The parsers in :mod:`mcpspec.spec.values` decide what is valid; these patterns let an
editor or check-jsonschema refuse the same mistakes without running them. They are
written for both dialects a schema meets: ECMA-262 (editors, check-jsonschema) and
Python's ``re`` (jsonschema): ASCII classes only, lookaheads but no lookbehinds.
A pattern may be narrower than its parser (surrounding blanks, netmask CIDRs), never
wider: tests generate strings from each pattern and feed them to the parser.
"""

from __future__ import annotations

_CONTROL = r"\x00-\x1f\x7f"
# No path segment is '..' (checked from the start of the string).
_NO_DOTDOT = r"(?!(?:.*/)?\.\.(?:/|$))"

SANDBOX_PATH_PATTERN = rf"^{_NO_DOTDOT}/[^{_CONTROL}]*$"
HOST_PATH_PATTERN = rf"^{_NO_DOTDOT}(?:/|~/|~$)[^{_CONTROL}]*$"
WORKSPACE_REF = r"workspace\.[a-z][a-z0-9_-]{0,39}"
MOUNT_SOURCE_PATTERN = rf"^(?:{WORKSPACE_REF}$|{_NO_DOTDOT}(?:/|~/|~$)[^{_CONTROL}]*$)"
CACHE_PATTERN = rf"^(?:{WORKSPACE_REF}$|{_NO_DOTDOT}/[^{_CONTROL}]*$)"
SINK_PATTERN = rf"^(?:stderr$|journal$|{_NO_DOTDOT}(?:/|~/|~$)[^{_CONTROL}]*$)"

# A logical path as mcpspec.diagnostics.parse_path reads it: servers.fetch.egress.allow[1], env.set["A.B"].
_SEGMENT = r'(?:\[[0-9]+\]|\["(?:[^"\\]|\\.)*"\])'
LOGICAL_PATH_PATTERN = rf"^(?:[A-Za-z_][A-Za-z0-9_-]*|{_SEGMENT})(?:\.[A-Za-z_][A-Za-z0-9_-]*|{_SEGMENT})*$"

# Secret references by provider (the resolver checks them with the same expressions).
SECRET_REF_PATTERNS = {
    "env": r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
    "vault": r"^[A-Za-z0-9_./-]+(#[A-Za-z0-9_.-]+)?$",
    "k8s-secret": r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?#[A-Za-z0-9_.-]+$",
    "systemd-credential": r"^[A-Za-z0-9_.-]{1,255}$",
    "file": HOST_PATH_PATTERN,
}

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{IPV4})"
# RFC 3986's IPv6address, which is what Python's ipaddress accepts.
IPV6 = "(?:" + "|".join(
    [
        rf"(?:{_H16}:){{6}}{_LS32}",
        rf"::(?:{_H16}:){{5}}{_LS32}",
        rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
        rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
        rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
        rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
        rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
    ]
) + ")"
IP_ADDRESS_PATTERN = f"^(?:{IPV4}|{IPV6})$"

_V4_PREFIX = r"/(?:3[0-2]|[12]?[0-9])"
_V6_PREFIX = r"/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9])"
_PORT = r"(?:0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])|\*)"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# host:port or *.domain:port: at least one dot, a last label that is not all digits, 253 characters at most.
_DOMAIN_DEST = rf"(?:\*\.)?(?=[^:]{{1,253}}:)(?:{_LABEL}\.)+(?![0-9]+:){_LABEL}:{_PORT}"
_V4_DEST = rf"{IPV4}(?:{_V4_PREFIX})?(?::{_PORT})?"
_V6_DEST = rf"{IPV6}(?:{_V6_PREFIX})?"
_BRACKETED = rf"\[(?:{IPV4}(?:{_V4_PREFIX})?|{IPV6}(?:{_V6_PREFIX})?)\](?::{_PORT})?"
EGRESS_PATTERN = f"^(?:{_DOMAIN_DEST}|{_V4_DEST}|{_V6_DEST}|{_BRACKETED})$"
