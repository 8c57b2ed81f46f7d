"""Read back what a systemd build grants each server, from its unit files alone.

Each server's template ``mcp-<project>_<server>@.service`` is parsed as systemd
parses it (``unitparse``); ``<server>.squid.conf`` gives the allowlist behind its
egress proxy, and a ``.socket`` of the same stem marks a stdio server. What a
setting leaves open is reported open: a host that ``ProtectSystem=strict`` keeps
readable is a read-only mount of ``/``, a missing ``IPAddressDeny=`` is
``default: allow``, a ``User=`` that is not dynamic may be root.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

from mcpspec.targets.grants import ANY, EgressGrant, Endpoint, Grants, Identity, Limits, MountGrant, SecretLanding
from mcpspec.targets.squid_reader import read_squid
from mcpspec.targets.systemd.unitparse import (
    Unit,
    UnitSyntaxError,
    extract_word,
    last,
    parse_bool,
    parse_percent,
    parse_size,
    parse_timespan,
    parse_unit,
    resolve_specifiers,
    split_words,
    values,
)

_SERVICE = re.compile(r"^mcp-([a-z0-9-]+)_([a-z0-9-]+)@\.service$")
CREDENTIALS = "{credentials}"
# What the reader resolves a specifier to: %t is /run for a system unit; the others stay symbolic.
SPECIFIERS = {"i": "{instance}", "I": "{instance}", "t": "/run", "d": CREDENTIALS}
_IP_KEYWORDS = {
    "any": ("0.0.0.0/0", "::/0"),
    "localhost": ("127.0.0.0/8", "::1/128"),
    "link-local": ("169.254.0.0/16", "fe80::/64"),
    "multicast": ("224.0.0.0/4", "ff00::/8"),
}
_METADATA_PROBES = ("169.254.169.254", "fd00:ec2::254")
S = "Service"


def read_build(files: Mapping[str, str]) -> dict[str, Grants]:
    """Grants per server, for every server template among ``files`` (name -> text)."""
    out: dict[str, Grants] = {}
    for name, text in sorted(files.items()):
        match = _SERVICE.match(name)
        if match is None:
            continue
        project, server = match.groups()
        stdio = f"mcp-{project}_{server}.socket" in files
        out[server] = read_service(server, parse_unit(text), files.get(f"{server}.squid.conf"), stdio)
    return out


def _words(value: str, cunescape: bool = False) -> list[str]:
    return [resolve_specifiers(w, SPECIFIERS) for w in split_words(value, cunescape=cunescape)]


def _list_setting(unit: Unit, key: str) -> list[str]:
    """A list setting where an empty assignment resets what came before."""
    found: list[str] = []
    for value in values(unit, S, key):
        found = [] if not value else [*found, *_words(value)]
    return found


def read_service(server: str, unit: Unit, squid: str | None, stdio: bool) -> Grants:
    enforced: set[str] = set()
    env, inherit, inherit_all = _environment(unit)
    if not inherit and not inherit_all:
        enforced.add("env")
    shim = _shim_arguments(unit)
    mounts, credential_files = _mounts(unit)
    enforced.add("mounts")
    if (last(unit, S, "ProtectSystem") or "") == "strict" and parse_bool(last(unit, S, "ProtectHome") or "no"):
        enforced.add("hidden-paths")
    secrets = _secrets(unit, shim, credential_files)
    if secrets and all(s.provider != "literal" for s in secrets):
        enforced.add("secrets")
    identity = _identity(unit)
    if identity.host_uid != 0 and not identity.capabilities and identity.no_new_privileges:
        enforced.add("identity")
    egress = _egress(unit, squid)
    if egress.default == "deny":
        enforced.add("egress-deny")
    if egress.mode == "proxy" and egress.default == "deny":
        enforced.add("egress-allowlist")
    if egress.mode != "none" and not any(egress.reaches(a) for a in _METADATA_PROBES):
        enforced.add("metadata-blocking")
    if parse_bool(last(unit, S, "PrivateNetwork") or "no") or "any" in _list_setting(unit, "SocketBindDeny"):
        enforced.add("listeners")
    limits = _limits(unit)
    for control, value in (("memory", limits.memory), ("pids", limits.pids), ("cpu", limits.cpu_percent), ("lifetime", limits.lifetime)):
        if value is not None:
            enforced.add(control)
    masks = _masks(unit)
    if masks:
        enforced.add("process-policy")
    if values(unit, S, "ExecStopPost"):
        enforced.add("audit-log")
    return Grants(
        target="systemd",
        server=server,
        mounts=tuple(sorted(mounts)),
        env_set=tuple(sorted(env.items())),
        env_inherit=tuple(inherit),
        env_inherit_all=inherit_all,
        secrets=tuple(sorted(secrets)),
        egress=egress,
        identity=identity,
        limits=limits,
        masked_commands=masks,
        enforced=frozenset(enforced),
    )


def _environment(unit: Unit) -> tuple[dict[str, str], list[str], bool]:
    env: dict[str, str] = {}
    for value in values(unit, S, "Environment"):
        if not value:
            env.clear()
            continue
        for word in split_words(value, cunescape=True):
            name, sep, setting = resolve_specifiers(word, SPECIFIERS).partition("=")
            if not sep:
                raise UnitSyntaxError(f"Environment= word without '=': {word!r}")
            env[name] = setting
    inherit = _list_setting(unit, "PassEnvironment")
    # A file's content is not in the build: whatever it sets counts as inherited.
    return env, inherit, bool(values(unit, S, "EnvironmentFile"))


def _exec_words(value: str) -> list[str]:
    words = [w.replace("$$", "$") for w in _words(value, cunescape=True)]
    if words:
        words[0] = words[0].lstrip("-@:+!|")
    return words


def _shim_arguments(unit: Unit) -> list[str]:
    """The arguments the in-sandbox shim reads before ``--`` (egress, VAR=credential ...)."""
    start = last(unit, S, "ExecStart")
    words = _exec_words(start) if start else []
    if "mcpspec-shim" not in words or "--" not in words:
        return []
    first = words.index("mcpspec-shim") + 1
    return words[first:words.index("--", first)]


def _mounts(unit: Unit) -> tuple[list[MountGrant], dict[str, list[str]]]:
    """Mounts, and the paths each credential is bound at (credential id -> paths)."""
    protect = (last(unit, S, "ProtectSystem") or "no").strip()
    mounts = [MountGrant("/", "host", "/", "ro" if protect == "strict" else "rw")]
    runtime_dirs = _list_setting(unit, "RuntimeDirectory")
    workspace_root = f"/run/{runtime_dirs[0]}/" if runtime_dirs else None
    credential_files: dict[str, list[str]] = {}
    for key, mode in (("BindPaths", "rw"), ("BindReadOnlyPaths", "ro")):
        for value in values(unit, S, key):
            for source, target in _bind_entries(value):
                if source.startswith(CREDENTIALS + "/"):
                    credential_files.setdefault(source[len(CREDENTIALS) + 1:], []).append(target)
                elif workspace_root and source.startswith(workspace_root) and source[len("/run/"):] in runtime_dirs[1:]:
                    mounts.append(MountGrant(target, "workspace", source.rsplit("/", 1)[1], mode))  # type: ignore[arg-type]
                else:
                    mounts.append(MountGrant(target, "host", source, mode))  # type: ignore[arg-type]
    for path in _list_setting(unit, "ReadWritePaths"):
        clean = path.lstrip("-+")
        mounts.append(MountGrant(clean, "host", clean, "rw"))
    for value in values(unit, S, "TemporaryFileSystem"):
        for word in _words(value):
            target, _, options = word.partition(":")
            flags = options.split(",") if options else []
            size = next((_tmpfs_size(f[5:]) for f in flags if f.startswith("size=")), None)
            mounts.append(MountGrant(target, "tmpfs", "", "ro" if "ro" in flags else "rw", size))
    return mounts, credential_files


def _bind_entries(value: str) -> list[tuple[str, str]]:
    """(source, target) pairs of one BindPaths=-style value: SRC[:DST[:OPTIONS]] separated by whitespace."""
    out: list[tuple[str, str]] = []
    rest = value
    while True:
        source, rest, sep = extract_word(rest, ": \t\n\r", coalesce=False)
        if source is None:
            return out
        if not source and sep != ":":
            continue
        target = source
        if sep == ":":
            target_word, rest, sep = extract_word(rest, ": \t\n\r", coalesce=False)
            target = target_word or source
            if sep == ":":
                _options, rest, _ = extract_word(rest)
        source = resolve_specifiers(source, SPECIFIERS).removeprefix("-")
        out.append((source, resolve_specifiers(target, SPECIFIERS)))


def _tmpfs_size(text: str) -> int | None:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    if text[-1:].lower() in units:
        return int(float(text[:-1]) * units[text[-1].lower()])
    return int(text) if text.isdigit() else None


def _secrets(unit: Unit, shim: list[str], credential_files: dict[str, list[str]]) -> list[SecretLanding]:
    sources: dict[str, tuple[str, str]] = {}
    for key in ("LoadCredential", "LoadCredentialEncrypted"):
        for value in values(unit, S, key):
            ident, rest, _ = extract_word(value, ":", unquote=False, coalesce=False)
            if not ident:
                continue
            path = resolve_specifiers(rest, SPECIFIERS) or ident
            sources[ident] = ("file", path) if path.startswith("/") else ("systemd-credential", path)
    for key in ("SetCredential", "SetCredentialEncrypted"):
        for value in values(unit, S, key):
            ident = value.split(":", 1)[0]
            sources[ident] = ("literal", "")  # a value written into the unit itself
    envs: dict[str, list[str]] = {}
    for word in shim:
        variable, sep, credential = word.partition("=")
        if sep:
            envs.setdefault(credential, []).append(variable)
    landings: list[SecretLanding] = []
    for ident, (provider, ref) in sources.items():
        forms: list[tuple[str | None, str | None]] = [(v, None) for v in envs.get(ident, [])]
        forms += [(None, f) for f in credential_files.get(ident, [])]
        # Without a form, the value is still readable in $CREDENTIALS_DIRECTORY.
        landings += [SecretLanding(ident, provider, ref, env, file) for env, file in forms or [(None, None)]]
    return landings


def _identity(unit: Unit) -> Identity:
    user = last(unit, S, "User")
    host_uid: int | None = None  # a dynamic or named user: not root
    if user is None or user in ("root", "0"):
        host_uid = 0  # a system unit without User= runs as root, DynamicUser= or not
    elif user.isdigit():
        host_uid = int(user)
    capabilities: set[str] | None = None  # None: every capability
    touched = False
    for value in values(unit, S, "CapabilityBoundingSet"):
        if not value:
            capabilities = set()
        elif value.startswith("~"):
            capabilities = None  # all but some: reported as all
        elif not touched:
            capabilities = set(value.split())
        elif capabilities is not None:
            capabilities.update(value.split())
        touched = True
    for value in values(unit, S, "AmbientCapabilities"):
        if value and capabilities is not None:
            capabilities.update(value.lstrip("~").split())
    caps = frozenset({"ALL"}) if capabilities is None else frozenset(capabilities)
    return Identity(None, None, host_uid, caps, parse_bool(last(unit, S, "NoNewPrivileges") or "no"))


def _networks(unit: Unit, key: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for word in _list_setting(unit, key):
        for text in _IP_KEYWORDS.get(word, (word,)):
            nets.append(ipaddress.ip_network(text, strict=False))
    return nets


def _egress(unit: Unit, squid: str | None) -> EgressGrant:
    families = _list_setting(unit, "RestrictAddressFamilies")
    inet = not families or families[0].startswith("~") or bool({"AF_INET", "AF_INET6"} & set(families))
    if families == ["none"]:
        inet = False
    private = parse_bool(last(unit, S, "PrivateNetwork") or "no")
    proxied = read_squid(squid) if squid is not None else None
    if not inet:
        return EgressGrant("none")
    if private:
        return proxied if proxied is not None else EgressGrant("none")
    allowed = _networks(unit, "IPAddressAllow")
    denied = _networks(unit, "IPAddressDeny")
    deny_all = any(n.prefixlen == 0 for n in denied if n.version == 4) and any(n.prefixlen == 0 for n in denied if n.version == 6)
    allow = {Endpoint("cidr", str(n)) for n in allowed}
    loopback = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")]
    host_loopback = any(n.overlaps(lo) for n in allowed for lo in loopback if n.version == lo.version)
    if not deny_all:
        allow.add(ANY)
        host_loopback = host_loopback or not any(lo.subnet_of(n) for n in denied for lo in loopback if n.version == lo.version)  # type: ignore[arg-type]
    # IPAddressAllow= wins over IPAddressDeny=: a denied range is refused only outside every allowed one.
    deny = frozenset(Endpoint("cidr", str(n)) for n in _carve(denied, allowed)) if not deny_all else frozenset()
    if proxied is not None:
        return EgressGrant("proxy", "deny" if deny_all else "allow", frozenset(allow | proxied.allow), deny | proxied.deny, host_loopback)
    return EgressGrant("direct", "deny" if deny_all else "allow", frozenset(allow), deny, host_loopback)


def _carve(denied: list[ipaddress.IPv4Network | ipaddress.IPv6Network],
           allowed: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    pieces = list(denied)
    for hole in allowed:
        carved: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for piece in pieces:
            if piece.version != hole.version or not piece.overlaps(hole):
                carved.append(piece)
            elif not piece.subnet_of(hole):  # type: ignore[arg-type]
                carved.extend(piece.address_exclude(hole))  # type: ignore[arg-type]
        pieces = carved
    return pieces


def _limits(unit: Unit) -> Limits:
    memory = last(unit, S, "MemoryMax")
    tasks = last(unit, S, "TasksMax")
    quota = last(unit, S, "CPUQuota")
    lifetime = last(unit, S, "RuntimeMaxSec")
    return Limits(
        memory=parse_size(memory) if memory else None,
        pids=int(tasks) if tasks and tasks.isdigit() else None,
        cpu_percent=parse_percent(quota) if quota else None,
        lifetime=parse_timespan(lifetime) if lifetime else None,
    )


_COMMAND_DIRS = ("/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin")


def _masks(unit: Unit) -> tuple[str, ...]:
    """Hidden commands: a name hidden in every command directory, or an absolute path."""
    paths = [p.lstrip("-+") for p in _list_setting(unit, "InaccessiblePaths")]
    names = {p.rsplit("/", 1)[1] for p in paths if p.rsplit("/", 1)[0] in _COMMAND_DIRS}
    found = [n for n in names if all(f"{d}/{n}" in paths for d in _COMMAND_DIRS)]
    found += [p for p in paths if p.rsplit("/", 1)[0] not in _COMMAND_DIRS and p.count("/") > 1]
    return tuple(sorted(found))
