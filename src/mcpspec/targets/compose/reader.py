"""What a compose build grants each server, read back from ``compose.yaml`` (and the squid.conf it mounts).

Only the files are read. What this reader does not recognise it reports as granted:
a network that is not ``internal: true`` is the whole network, a mount it cannot place
is a host mount of that text, a service without ``cap_drop: [ALL]`` keeps ``ALL``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from mcpspec.targets.compose.envsecrets import ENV_KEY, WRAPPER_FILE, write_line
from mcpspec.targets.compose.links import HTTP_SOCKET, SOCAT
from mcpspec.targets.grants import ANY, EgressGrant, Grants, Identity, Limits, Mode, MountGrant, SecretLanding
from mcpspec.targets.squid_reader import read_squid

_HOME = re.compile(r"^\$\{HOME(:?\?[^}]*)?\}")
_RUN_DIR = re.compile(r"^\$\{MCPSPEC_RUN_DIR(:?\?[^}]*)?\}/")
_SHIM = "/mcpspec/entrypoint.sh"


def read_build(files: Mapping[str, str]) -> dict[str, Grants]:
    text = files.get("compose.yaml")
    if text is None:
        return {}
    document = yaml.safe_load(text)
    services: dict[str, Any] = document.get("services") or {}
    networks: dict[str, Any] = document.get("networks") or {}
    secrets: dict[str, Any] = document.get("secrets") or {}
    out: dict[str, Grants] = {}
    for svc in services.values():
        labels = svc.get("labels") or {}
        if "mcpspec.role" in labels:  # a helper of a server (proxy, link, port service), read as part of its server's way out
            continue
        server = labels["mcpspec.server"]
        out[server] = read_service(svc, services, networks, secrets, files)
    return out


def _secret_source(name: str, declared: Mapping[str, Any], files: Mapping[str, str]) -> tuple[str, str]:
    """(provider, ref) of a declared secret: a variable when the compose wrapper writes its file from one, else the file."""
    if "environment" in declared:
        return "env", str(declared["environment"])
    variable = str(declared.get(ENV_KEY, ""))
    written = write_line(variable, name)
    if variable and written in (line.strip() for line in files.get(WRAPPER_FILE, "").splitlines()):
        return "env", variable
    return "file", _host(str(declared.get("file", "")))


def _text(value: str) -> str:
    return value.replace("$$", "$")


def read_service(svc: Mapping[str, Any], services: Mapping[str, Any], networks: Mapping[str, Any], secrets: Mapping[str, Any], files: Mapping[str, str]) -> Grants:
    entrypoint = [str(a) for a in svc.get("entrypoint") or []]
    shim = entrypoint[:2] == ["/bin/sh", _SHIM]
    options = entrypoint[2 : entrypoint.index("--")] if shim and "--" in entrypoint else []
    lifetime = next((float(o.removeprefix("lifetime=")) for o in options if o.startswith("lifetime=")), None)
    env_files = dict(o.split("=", 1) for o in options if not o.startswith("lifetime="))
    env_set: list[tuple[str, str]] = []
    inherited: list[str] = []
    for item in svc.get("environment") or []:
        name, sep, value = str(item).partition("=")
        if sep:
            env_set.append((name, _text(value)))
        else:
            inherited.append(name)
    landings = []
    for use in svc.get("secrets") or []:
        source, target = (use, f"/run/secrets/{use}") if isinstance(use, str) else (use["source"], use.get("target", f"/run/secrets/{use['source']}"))
        declared = secrets.get(source) or {}
        provider, ref = _secret_source(source, declared, files)
        variable = next((v for v, f in env_files.items() if f == target), None)
        landings.append(SecretLanding(source, provider, ref, env=variable, file=None if variable else target))
    mounts = [_mount(v) for v in svc.get("volumes") or []]
    identity = _identity(svc)
    egress = _egress(svc, services, networks, files)
    limits = Limits(
        memory=_int(svc.get("mem_limit")), pids=_int(svc.get("pids_limit")),
        cpu_percent=float(svc["cpus"]) * 100 if svc.get("cpus") is not None else None, lifetime=lifetime,
    )
    enforced = {"mounts", "hidden-paths", "env", "secrets", "egress-deny", "listeners"}
    if identity.uid not in (None, 0) and not identity.capabilities and identity.no_new_privileges:
        enforced.add("identity")
    enforced |= {c for c, v in (("memory", limits.memory), ("pids", limits.pids), ("cpu", limits.cpu_percent), ("lifetime", lifetime)) if v is not None}
    if egress.mode == "proxy":
        enforced |= {"egress-allowlist", "metadata-blocking"}
    return Grants(
        target="compose", server=str((svc.get("labels") or {}).get("mcpspec.server")), mounts=tuple(sorted(mounts)),
        env_set=tuple(env_set), env_inherit=tuple(inherited), env_inherit_all=False, secrets=tuple(sorted(landings)),
        egress=egress, identity=identity, limits=limits, enforced=frozenset(enforced),
    )


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def _host(source: str) -> str:
    """A host path as the spec writes it (``~/x`` for one under ``${HOME}``)."""
    match = _HOME.match(source)
    if match:
        rest = source[match.end():]
        return "~" + rest if rest else "~"
    return _text(source)


def _mount(volume: Any) -> MountGrant:
    if isinstance(volume, str):  # short syntax: read as the widest it can be
        source, _, rest = volume.partition(":")
        target, _, options = rest.partition(":")
        return MountGrant(target or source, "host", source, "ro" if options.split(",")[0] == "ro" else "rw")
    mode: Mode = "ro" if volume.get("read_only") else "rw"
    target = _text(str(volume["target"]))
    if volume.get("type") == "tmpfs":
        size = (volume.get("tmpfs") or {}).get("size")
        return MountGrant(target, "tmpfs", "", mode, int(size) if size is not None else None)
    source = str(volume.get("source", ""))
    run = _RUN_DIR.match(source)
    if run:
        return MountGrant(target, "workspace", source[run.end():], mode)
    host = _host(source)
    return MountGrant(target, "home" if host.startswith("~") else "host", host, mode)


def _identity(svc: Mapping[str, Any]) -> Identity:
    user = str(svc.get("user", "0"))
    uid_text, _, gid_text = user.partition(":")
    uid = int(uid_text) if uid_text.isdigit() else 0  # a name is resolved by the image: assume root
    gid = int(gid_text) if gid_text.isdigit() else None
    dropped = "ALL" in (svc.get("cap_drop") or []) and not svc.get("cap_add") and not svc.get("privileged")
    nnp = "no-new-privileges:true" in (svc.get("security_opt") or [])
    return Identity(uid, gid, uid, frozenset() if dropped else frozenset({"ALL"}), nnp)


def _egress(svc: Mapping[str, Any], services: Mapping[str, Any], networks: Mapping[str, Any], files: Mapping[str, str]) -> EgressGrant:
    mode = svc.get("network_mode")
    if mode == "none":
        return EgressGrant("none")
    if isinstance(mode, str) and mode.startswith("service:"):
        owner = services.get(mode.removeprefix("service:"))
        if owner is None or owner is svc:
            return EgressGrant("direct", "allow", frozenset({ANY}))
        if owner.get("network_mode") == "none":
            return _linked(owner, services, files)
        return _egress(owner, services, networks, files)
    if "network_mode" in svc:
        return EgressGrant("direct", "allow", frozenset({ANY}), host_loopback=svc["network_mode"] == "host")
    joined = list(svc.get("networks") or ["default"])
    if any(not (networks.get(name) or {}).get("internal") for name in joined):
        return EgressGrant("direct", "allow", frozenset({ANY}))
    # Internal networks only: a way out exists only through another member that reaches out.
    for other in services.values():
        if other is svc:
            continue
        theirs = other.get("networks") or ["default"]
        if not any(n in theirs for n in joined):
            continue
        if (other.get("labels") or {}).get("mcpspec.role") != "egress-proxy":
            return EgressGrant("direct", "allow", frozenset({ANY}))
        return _squid(other, files)
    return EgressGrant("none")


def _squid(proxy: Mapping[str, Any], files: Mapping[str, str]) -> EgressGrant:
    """What an egress proxy service lets through: its squid.conf's allowlist."""
    conf = next((str(v["source"]).removeprefix("./") for v in proxy.get("volumes") or [] if isinstance(v, dict) and str(v.get("target", "")).endswith("squid.conf")), None)
    text = files.get(conf) if conf else None
    if text is None:
        return EgressGrant("direct", "allow", frozenset({ANY}))
    return read_squid(text)


def _named_volumes(svc: Mapping[str, Any]) -> set[str]:
    return {str(v.get("source")) for v in svc.get("volumes") or [] if isinstance(v, dict) and v.get("type") == "volume"}


def _linked(owner: Mapping[str, Any], services: Mapping[str, Any], files: Mapping[str, str]) -> EgressGrant:
    """A namespace with loopback only: the way out is whatever serves the sockets in the named volumes of
    the services in it (the owner and every service that joins it).
    A port service only connects to the server's socket; an egress proxy is its squid.conf; any other
    service sharing a volume with them is read as a way out to everything."""
    name = next((key for key, value in services.items() if value is owner), None)
    members = [owner, *(other for other in services.values() if other.get("network_mode") == f"service:{name}")]
    shared = {volume for member in members for volume in _named_volumes(member)}
    ways: list[EgressGrant] = []
    for other in services.values():
        if any(other is member for member in members) or not shared & _named_volumes(other):
            continue
        role = (other.get("labels") or {}).get("mcpspec.role")
        entrypoint = [str(a) for a in other.get("entrypoint") or []]
        if role == "port-forward" and len(entrypoint) == 3 and entrypoint[0] == SOCAT and entrypoint[2] == f"UNIX-CONNECT:{HTTP_SOCKET}":
            continue
        ways.append(_squid(other, files) if role == "egress-proxy" else EgressGrant("direct", "allow", frozenset({ANY})))
    if not ways:
        return EgressGrant("none")
    return ways[0] if len(ways) == 1 else EgressGrant("direct", "allow", frozenset({ANY}))
