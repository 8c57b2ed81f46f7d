"""Recognise a well-known server from the command line or URL a client config starts it with."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from functools import cache

from mcpspec.catalog.entries import ENTRIES
from mcpspec.catalog.model import Entry

_NODE_MODULES = re.compile(r"node_modules/((?:@[^/]+/)?[^/]+)")
_PYPI_VERSION = re.compile(r"(\[[^\]]*\])?\s*(==|>=|<=|~=|!=|>|<|@).*$")
_WINDOWS_SUFFIX = re.compile(r"\.(cmd|exe|bat|ps1)$", re.IGNORECASE)


@cache
def _index() -> dict[str, Entry]:
    """Every name that identifies an entry: package, aliases, installed program, Python module."""
    names: dict[str, Entry] = {}
    for entry in ENTRIES:
        keys = [entry.package.name, *entry.aliases, entry.command[0]]
        if entry.package.registry == "pypi":
            keys.append(entry.package.name.replace("-", "_"))
        for key in keys:
            names.setdefault(key.lower(), entry)
    return names


def _candidates(token: str) -> list[str]:
    """The names a command-line token may stand for, once versions, tags and paths are taken off."""
    token = token.strip().replace("\\", "/")
    found: list[str] = []
    module = _NODE_MODULES.search(token)
    if module:
        found.append(module.group(1))
    base = _WINDOWS_SUFFIX.sub("", token.rsplit("/", 1)[-1]) if "/" in token and not token.startswith("@") else _WINDOWS_SUFFIX.sub("", token)
    found.append(base)
    image = token.split("@sha256:", 1)[0]
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        image = image[: len(image) - len(last)] + last.split(":", 1)[0]
    found.append(image)
    for prefix in ("docker.io/", "index.docker.io/", "library/"):
        if image.startswith(prefix):
            found.append(image[len(prefix) :])
    if token.startswith("@") and token.count("@") > 1:
        found.append(token.rsplit("@", 1)[0])
    elif not token.startswith("@") and "@" in token and "://" not in token:
        found.append(token.split("@", 1)[0])
    found.append(_PYPI_VERSION.sub("", token))
    return [name.lower() for name in found if name]


def _by_url(url: str) -> Entry | None:
    normal = url.strip().rstrip("/").lower()
    for entry in ENTRIES:
        for prefix in entry.urls:
            stem = prefix.rstrip("/").lower()
            if normal == stem or normal.startswith(stem + "/"):
                return entry
    return None


def lookup(target: Sequence[str] | str) -> Entry | None:
    """The catalog entry a client config's command line (argv or one string) or server URL starts, or None.

    Recognises launchers (`npx -y @modelcontextprotocol/server-github`, `uvx mcp-server-fetch`,
    `pipx run`, `python -m mcp_server_git`), containers (`docker run -i --rm mcp/filesystem`) with
    any tag or digest, installed programs, paths under node_modules, and the vendor's remote URL
    (also behind `mcp-remote`).
    """
    if isinstance(target, str):
        if re.match(r"^https?://", target.strip(), re.IGNORECASE):
            return _by_url(target)
        argv: Sequence[str]
        try:
            # A Windows path's backslashes are not escapes.
            argv = target.split() if "\\" in target else shlex.split(target)
        except ValueError:
            argv = target.split()
    else:
        argv = target
    names = _index()
    for token in argv:
        if re.match(r"^https?://", token, re.IGNORECASE):
            entry = _by_url(token)
            if entry is not None:
                return entry
            continue
        if token.startswith("-") and "=" not in token:
            continue
        value = token.split("=", 1)[1] if token.startswith("-") else token
        for name in _candidates(value):
            if name in names:
                return names[name]
    return None


def entries() -> tuple[Entry, ...]:
    """Every entry of the catalog, in a stable order."""
    return ENTRIES


def get(name: str) -> Entry | None:
    """The entry with this catalog name (`github`, `fetch`...), or None."""
    return next((entry for entry in ENTRIES if entry.name == name), None)
