"""Escaping for the languages targets write: POSIX shell and systemd unit files.

A value either comes out quoted so the target reads back exactly the same
bytes, or it is refused (``Unrepresentable``) and the build stops with TG004.
Nothing user-written is ever interpolated raw.
"""

from __future__ import annotations

import re

_SHELL_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+\Z")  # \Z: "$" would also match before a final newline
_UNIT_PATH_SAFE = re.compile(r"^/[A-Za-z0-9_@+=,./-]*\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Unrepresentable(ValueError):
    """A value the target language cannot carry safely."""


def sh(value: str) -> str:
    """One shell word that expands to exactly ``value``."""
    if "\x00" in value:
        raise Unrepresentable("a NUL byte cannot appear in a shell word")
    if _SHELL_SAFE.match(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def sh_words(values: list[str] | tuple[str, ...]) -> str:
    return " ".join(sh(value) for value in values)


def unit_text(value: str) -> str:
    """Free text in a unit setting (Description=): specifiers and line breaks neutralized.

    The setting is not unquoted, so what it cannot say is refused: a control character,
    spaces at either end (systemd strips them) and a final backslash (systemd would
    continue the line with the next one, swallowing the setting that follows).
    """
    if _CONTROL.search(value):
        raise Unrepresentable("a control character (newline, tab) cannot appear in a unit setting")
    if not value:
        raise Unrepresentable("an empty setting resets it")
    if value != value.strip(" "):
        raise Unrepresentable("systemd drops spaces at either end of a unit setting")
    if value.endswith("\\"):
        raise Unrepresentable("a backslash at the end of a unit line continues it on the next line")
    return value.replace("%", "%%")


def unit_arg(value: str, variables: bool = True) -> str:
    """One word of ExecStart=: double-quoted, with specifiers, variables and escapes neutralized.

    ``variables`` False is for settings that do not expand ``$NAME`` (Environment=),
    where a doubled ``$$`` would stay doubled.
    """
    if "\x00" in value:
        raise Unrepresentable("a NUL byte cannot appear in a command line")
    # Each character is replaced on its own: the backslash is doubled first, as the later
    # passes add backslashes of their own (which must stay single); no pass adds what another replaces.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if variables:
        escaped = escaped.replace("$", "$$")
    return '"' + _CONTROL.sub(_hex_escape, escaped) + '"'


def _hex_escape(control: re.Match[str]) -> str:
    return f"\\x{ord(control.group()):02x}"


def unit_env(name: str, value: str) -> str:
    """One Environment= assignment, quoted as a single word (specifiers and escapes neutralized; $ is literal there)."""
    return unit_arg(f"{name}={value}", variables=False)


def unit_path(value: str) -> str:
    """An absolute path in a path-list setting (BindPaths=, ReadWritePaths=).

    Those settings split on spaces and colons; rather than lean on escape rules
    that differ between settings, a path outside a conservative set is refused.
    """
    if not _UNIT_PATH_SAFE.match(value) or "//" in value:
        raise Unrepresentable(
            f"path {value!r} has characters a systemd path list cannot carry safely (only letters, digits and _@+=,./- are allowed)"
        )
    # systemd ignores a path that is not normalized (with a warning): InaccessiblePaths=
    # would then hide nothing.
    if value != "/" and (value.endswith("/") or any(part in (".", "..") for part in value.split("/"))):
        raise Unrepresentable(f"path {value!r} is not normalized (a . or .. component, or a final /); systemd would ignore it")
    return value.replace("%", "%%")
