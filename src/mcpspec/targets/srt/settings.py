"""One server's sandbox-runtime settings (``<server>.srt-settings.json``), from its sandbox alone.

srt 0.0.83 reads ``filesystem.{denyRead,allowRead,allowWrite,denyWrite}`` and
``network.{allowedDomains,deniedDomains,deniedResolvedAddresses}`` (its Zod schema,
``sandbox-config.ts``). Reads are allowed everywhere unless denied, so the settings
deny ``/`` and re-allow only the runtime (``/usr``, a few files of ``/etc``) and the
spec's mounts; writes go only to the rw mounts. srt's allowlist takes names
(``host``, ``*.host``, optional ``:port``) and refuses after resolution whatever
``deniedResolvedAddresses`` lists: an address entry of the spec, a name srt's schema
refuses, and a default of ``allow`` cannot be written, so they are refused here.
Every path is a ``{"path": ..., "literal": true}`` entry: never read as a pattern.
"""

from __future__ import annotations

from typing import Any

from mcpspec.addresses import NEVER_NETWORKS, REFUSED_NETWORKS, squid_form
from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox
from mcpspec.spec.values import Destination
from mcpspec.targets.base import Refused
from mcpspec.targets.egress import egress_plan

# What every sandbox reads besides its mounts: the host's programs and libraries, the
# dynamic-linker, TLS and timezone files of /etc (the bwrap target's set), and /etc/hosts, where
# the name of srt's proxy (HTTP_PROXY=http://localhost:3128) is found.
RUNTIME_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
                *(f"/etc/{name}" for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
                                              "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "localtime", "hosts")))
# Refused after resolution whatever name leads there: metadata, loopback, private, link-local...
# (the IPv4-mapped block is left out: a range holding it would hold every IPv4 address).
RESOLVED_DENY = tuple(squid_form((*NEVER_NETWORKS, *REFUSED_NETWORKS)))


def literal(path: str) -> dict[str, object]:
    return {"path": path, "literal": True}


def settings(sandbox: EffectiveSandbox) -> dict[str, Any]:
    """The settings srt reads for this server; raises Refused for what srt cannot say."""
    mounts = [_host_mount(sandbox, mount) for mount in sandbox.mounts]
    writable = [m.target for m in mounts if m.writable]
    return {
        "filesystem": {
            "denyRead": [literal("/")],
            "allowRead": [literal(path) for path in (*RUNTIME_READ, *(m.target for m in mounts))],
            "allowWrite": [literal(path) for path in writable],
            # A read-only mount inside a writable one stays read-only: srt's denyWrite wins over allowWrite.
            "denyWrite": [literal(m.target) for m in mounts if not m.writable and any(under(m.target, w) for w in writable)],
            "allowGitConfig": False,
        },
        "network": _network(sandbox),
        "allowNestedUserNamespaces": False,
        "enableWeakerNestedSandbox": False,
    }


def _host_mount(sandbox: EffectiveSandbox, mount: EffectiveMount) -> EffectiveMount:
    """A mount srt can give: a host path at the same path (srt binds nothing elsewhere)."""
    if mount.kind != "host":
        what = {"home": "a path under ~ (its place depends on who runs it)", "workspace": "a workspace dir (made per run, under the workspace root)",
                "tmpfs": "a tmpfs workspace dir"}[mount.kind]
        raise Refused("mounts", mount.path, f"srt cannot mount {what} at {mount.target}: it shows host paths only where they are; "
                      "mount a host path at the same path instead")
    if mount.source != mount.target:
        raise Refused("mounts", mount.path, f"srt cannot mount {mount.source} at {mount.target}: it shows host paths only where they are "
                      "(write `to` the same path as `from`)")
    if mount.target == "/" or any(part in ("", ".", "..") for part in mount.target.split("/")[1:]):
        raise Refused("mounts", mount.path, f"mount path {mount.target!r} is not a normalized path below / (no //, . or .. component, no final /)")
    return mount


def under(path: str, parent: str) -> bool:
    """Whether ``path`` is ``parent`` or lies below it."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _network(sandbox: EffectiveSandbox) -> dict[str, Any]:
    egress = egress_plan(sandbox)
    origin = sandbox.origin
    if egress.default == "allow":
        raise Refused("egress-deny", origin("egress.default"),
                      "srt cannot allow every destination (its allowlist refuses '*'): list the names the server needs with egress.default: deny")
    allowed = [_allowed(destination, origin("egress.allow")) for destination in egress.allow]
    denied_names = [_name(d) for d in egress.deny if d.kind != "cidr" and _valid_name(d)]
    if any(d.kind != "cidr" and not _valid_name(d) for d in egress.deny):
        bad = next(d for d in egress.deny if d.kind != "cidr" and not _valid_name(d))
        raise Refused("egress-deny", origin("egress.deny"), f"srt cannot write the deny entry {bad.text}: its schema takes a name with a dot, or *.name.tld")
    # A denied address range is refused after resolution; with its port or not, the whole range (narrower, never wider).
    denied_ranges = [str(d.network) for d in egress.deny if d.kind == "cidr"]
    return {
        "allowedDomains": allowed,
        "deniedDomains": denied_names,
        "deniedResolvedAddresses": list(dict.fromkeys([*denied_ranges, *RESOLVED_DENY])),
        "strictAllowlist": True,
        "allowLocalBinding": False,
        "allowAllUnixSockets": False,
    }


def _valid_name(destination: Destination) -> bool:
    """What srt's schema takes: a name with a dot, or ``*.`` and a name with a dot."""
    host = destination.host.removeprefix("*.")
    return "." in host and "*" not in host and not host.startswith(".") and not host.endswith(".")


def _name(destination: Destination) -> str:
    return destination.host if destination.port is None else f"{destination.host}:{destination.port}"


def _allowed(destination: Destination, path: tuple[str | int, ...]) -> str:
    if destination.kind == "cidr":
        raise Refused("egress-allowlist", path, f"srt cannot allow the address entry {destination.text}: its allowlist takes names "
                      "(an allowed address is reachable only by that literal, not a range, and srt cannot say both)")
    if not _valid_name(destination):
        raise Refused("egress-allowlist", path, f"srt cannot allow {destination.text}: its schema takes a name with a dot, or *.name.tld "
                      "(it refuses single-label names and wildcards over a top-level domain)")
    return _name(destination)
