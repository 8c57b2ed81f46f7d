"""Read back what an srt build grants each server, from its files alone.

``<server>.srt-settings.json`` is what srt enforces; ``<server>.sh`` adds the environment,
the limits and the two directories it re-allows for reading at launch (srt's seccomp helper and
its own temporary directory, neither of the host's data). The reader errs on the wide side: a
read rule it does not recognise leaves ``/`` readable, an allowed entry it cannot parse is ``any``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from mcpspec.targets.grants import ANY, EgressGrant, Endpoint, EndpointKind, Grants, Identity, Limits, Mode, MountGrant
from mcpspec.targets.srt.launcher import SETTINGS_SUFFIX
from mcpspec.targets.srt.settings import under

_INHERITED = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\+\1=\$\1\}\Z")  # ${NAME+"NAME=$NAME"} after shlex
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.DOTALL)
_HEREDOC = "MCPSPEC_SETTINGS"
_ENFORCED = frozenset({"mounts", "hidden-paths", "identity", "env", "egress-deny", "egress-allowlist", "metadata-blocking", "listeners",
                       "memory", "pids", "lifetime", "syscall-filter"})


def read_build(files: Mapping[str, str]) -> dict[str, Grants]:
    """Grants per server, for every settings file among ``files`` (name -> text)."""
    out: dict[str, Grants] = {}
    for name, text in sorted(files.items()):
        if "/" in name or not name.endswith(SETTINGS_SUFFIX):
            continue
        server = name.removesuffix(SETTINGS_SUFFIX)
        out[server] = read_server(server, json.loads(text), files.get(f"{server}.sh", ""))
    return out


def _paths(entries: list[Any]) -> list[str]:
    return [entry["path"] if isinstance(entry, dict) else str(entry) for entry in entries]



def read_server(server: str, settings: Mapping[str, Any], launcher: str) -> Grants:
    filesystem = settings.get("filesystem", {})
    denied = _paths(filesystem.get("denyRead", []))
    readable = _paths(filesystem.get("allowRead", []))
    writable = _paths(filesystem.get("allowWrite", []))
    kept = _paths(filesystem.get("denyWrite", []))
    if denied != ["/"]:
        readable = ["/", *readable]  # reads are srt's default: anything not denied is there
    mounts = []
    for path in dict.fromkeys([*readable, *writable]):
        mode: Mode = "rw" if any(under(path, w) for w in writable) and not any(under(path, k) for k in kept) else "ro"
        mounts.append(MountGrant(path, "host", path, mode))
    declared, inherited, inherit_all, limits = _launch(launcher)
    return Grants(
        target="srt",
        server=server,
        mounts=tuple(sorted(mounts)),
        env_set=tuple(declared),
        env_inherit=tuple(inherited),
        env_inherit_all=inherit_all,
        secrets=(),
        egress=_egress(settings.get("network", {})),
        identity=Identity(uid=None, gid=None, host_uid=None, capabilities=frozenset(), no_new_privileges=True),
        limits=limits,
        enforced=_ENFORCED,
    )


def _egress(network: Mapping[str, Any]) -> EgressGrant:
    allow = frozenset(_endpoint(entry) for entry in network.get("allowedDomains", []))
    deny = frozenset([*(_endpoint(entry) for entry in network.get("deniedDomains", [])),
                      *(Endpoint("cidr", str(entry)) for entry in network.get("deniedResolvedAddresses", []))])
    return EgressGrant(mode="proxy", default="deny", allow=allow, deny=deny)


def _endpoint(entry: object) -> Endpoint:
    text = str(entry)
    host, _, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
    if not host or "[" in text or (port and not port.isdigit()):
        return ANY
    kind: EndpointKind = "wildcard" if host.startswith("*.") else "domain"
    return Endpoint(kind, host, int(port) if port else None)


def _launch(launcher: str) -> tuple[list[tuple[str, str]], list[str], bool, Limits]:
    """The variables set and inherited, and the limits, from the line that starts srt."""
    words = _start_words(launcher)
    declared: list[tuple[str, str]] = []
    inherited: list[str] = []
    inherit_all = not (len(words) > 1 and words[1] == "-i")
    for word in words[1:]:
        found = _INHERITED.match(word)
        if found:
            inherited.append(found.group(1))
            continue
        assignment = _ASSIGNMENT.match(word)
        if word == "-i":
            continue
        if assignment is None:
            break
        if word != "TMPDIR=$tmp":  # srt's own temporary directory (srt sets the sandbox's TMPDIR itself)
            declared.append((assignment.group(1), assignment.group(2)))
    memory = _option(words, "--as=")
    pids = _option(words, "--nproc=")
    lifetime = None
    if "/usr/bin/timeout" in words:
        at = words.index("/usr/bin/timeout")
        lifetime = float(words[at + 2]) + float(words[at + 1].removeprefix("--kill-after="))
    return declared, inherited, inherit_all, Limits(memory=memory, pids=pids, lifetime=lifetime)


def _start_words(launcher: str) -> list[str]:
    """The words of the command that starts srt, up to its here-document: a quoted value may hold newlines, so the command
    may span lines. A command the lexer cannot read is read as passing the whole environment and setting no limit."""
    start = launcher.find("\n/usr/bin/env ")
    if start < 0:
        return []
    lexer = shlex.shlex(launcher[start + 1:], posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    try:
        for word in lexer:
            if word == "3<<" + _HEREDOC:
                return words
            words.append(word)
    except ValueError:
        pass
    return ["/usr/bin/env"]


def _option(words: list[str], prefix: str) -> int | None:
    if "/usr/bin/prlimit" not in words:
        return None
    start = words.index("/usr/bin/prlimit")
    for word in words[start + 1:]:
        if word == "--":
            break
        if word.startswith(prefix):
            return int(word.removeprefix(prefix))
    return None
