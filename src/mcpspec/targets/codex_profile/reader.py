"""What a codex-profile build grants each server, read back from ``codex-config.toml`` alone.

A profile's filesystem table is what the server sees (each path where it is on the host);
what this reader does not recognise it reports as granted: a network table other than
``enabled = false`` is every address, an entry that does not start `codex sandbox` under a
profile of the file is a server with the whole environment and no sandbox.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

from mcpspec.targets.codex_profile.profile import FRESH_KEYRING, PERL
from mcpspec.targets.grants import ANY, EgressGrant, Grants, Identity, Limits, MountGrant, MountKind

CONFIG_FILE = "codex-config.toml"
_INHERITED = re.compile(r'\$\{([A-Za-z_][A-Za-z0-9_]*)\+"\1=\$\1"\}')
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.DOTALL)
_UNSANDBOXED = Identity(uid=None, gid=None, host_uid=0, capabilities=frozenset({"ALL"}), no_new_privileges=False)
# Codex's sandbox: the invoking user's uid in a user namespace, no capabilities, no_new_privs.
_SANDBOXED = Identity(uid=None, gid=None, host_uid=None, capabilities=frozenset(), no_new_privileges=True)


def read_build(files: Mapping[str, str]) -> dict[str, Grants]:
    text = files.get(CONFIG_FILE)
    if text is None:
        return {}
    document = tomllib.loads(text)
    profiles: dict[str, Any] = document.get("permissions") or {}
    return {name: read_entry(name, entry, profiles) for name, entry in (document.get("mcp_servers") or {}).items()}


def read_entry(name: str, entry: Mapping[str, Any], profiles: Mapping[str, Any]) -> Grants:
    args = [str(arg) for arg in entry.get("args") or []]
    sandboxed = entry.get("command") == "codex" and args[:2] == ["sandbox", "--permission-profile"] and len(args) > 3 and args[3] == "--"
    profile = profiles.get(args[2]) if sandboxed else None
    if profile is None:
        return Grants("codex-profile", name, (MountGrant("/", "host", "/", "rw"),), (), (), True, (), EgressGrant("direct", "allow", frozenset({ANY}), host_loopback=True),
                      _UNSANDBOXED, Limits())
    mounts = tuple(sorted(_mount(path, access) for path, access in (profile.get("filesystem") or {}).items()))
    network = profile.get("network")
    egress = EgressGrant("none") if network == {"enabled": False} else EgressGrant("direct", "allow", frozenset({ANY}), host_loopback=True)
    inner = args[4:]
    if inner[:3] == [PERL, "-e", FRESH_KEYRING]:
        inner = inner[3:]
    limits, inner = _limits(inner)
    env_set, inherit, inherit_all = _environment(inner, entry)
    enforced = frozenset({"mounts", "identity", "env", "egress-deny", "listeners", "syscall-filter"} if egress.mode == "none" else {"mounts", "identity", "env"})
    return Grants("codex-profile", name, mounts, env_set, inherit, inherit_all, (), egress, _SANDBOXED, limits, enforced=enforced)


def _mount(path: str, access: object) -> MountGrant:
    """A filesystem key as the server sees it: read is ro, anything else (write, a table of globs) is rw, on the wide side."""
    kind: MountKind = "home" if path.startswith("~") else "host"
    return MountGrant(path, kind, path, "ro" if access == "read" else "rw")


def _limits(argv: list[str]) -> tuple[Limits, list[str]]:
    """The limits the command's prefix sets (prlimit, timeout), and the command after them."""
    memory = pids = None
    lifetime: float | None = None
    if argv[:1] == ["/usr/bin/prlimit"] and "--" in argv:
        end = argv.index("--")
        for option in argv[1:end]:
            name, _, value = option.partition("=")
            if name == "--as" and value.isdigit():
                memory = int(value)
            elif name == "--nproc" and value.isdigit():
                pids = int(value)
        argv = argv[end + 1:]
    if argv[:1] == ["/usr/bin/timeout"] and len(argv) > 3 and argv[1].startswith("--kill-after=") and argv[2].isdigit():
        lifetime = float(argv[2])  # SIGTERM then; SIGKILL --kill-after later, as the other targets' lifetime
        argv = argv[3:]
    return Limits(memory=memory, pids=pids, lifetime=lifetime), argv


def _environment(argv: list[str], entry: Mapping[str, Any]) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...], bool]:
    """(variables set, names passed through, whether the whole environment passes) for the command inside the sandbox."""
    inherited: list[str] = []
    if argv[:2] == ["/bin/sh", "-c"] and len(argv) > 3:
        script = argv[2]
        inherited = _INHERITED.findall(script)
        rebuilt = "exec /usr/bin/env -i " + " ".join(f'${{{n}+"{n}=${n}"}}' for n in inherited) + ' "$@"'
        if script != rebuilt:
            return (), (), True
        argv = ["/usr/bin/env", "-i", *argv[4:]]
    if argv[:2] != ["/usr/bin/env", "-i"]:
        env = entry.get("env") or {}
        return tuple(sorted((str(k), str(v)) for k, v in env.items())), (), True
    values: list[tuple[str, str]] = []
    for word in argv[2:]:
        match = _ASSIGNMENT.match(word)
        if match is None:
            break
        values.append((match.group(1), match.group(2)))
    return tuple(values), tuple(inherited), False
