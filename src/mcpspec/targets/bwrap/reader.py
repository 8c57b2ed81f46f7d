"""Read back what a bwrap build grants each server, from its files alone.

A launcher ``<server>.py`` holds its per-server values as one ``CONFIG = {...}``
literal, read with ``ast.literal_eval`` (never executed), followed by the
constant runtime, whose few facts that matter here (the bwrap options it always
passes, the host uid that stands in for 0) are read from the text as well. A
server with an allowlist has ``<server>.squid.conf`` beside it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from mcpspec.targets.grants import ANY, EgressGrant, Grants, Identity, Limits, MountGrant, SecretLanding
from mcpspec.targets.squid_reader import read_squid

_CONFIG = re.compile(r"^CONFIG = \{\n(?:    .*\n)*?\}\n", re.MULTILINE)
_FALLBACK = re.compile(r"^FALLBACK_ID = (\d+)", re.MULTILINE)
_PROXY_VARIABLES = re.compile(r'for name in \(((?:"[A-Za-z_]+", ?)+"[A-Za-z_]+")\):\n\s+self\.args \+= \["--setenv", name, ')
_PROXY_PORT = re.compile(r"^PROXY_PORT_INSIDE = (\d+)", re.MULTILINE)
_FIXED_BIND = re.compile(r'"--ro-bind", "(/[A-Za-z0-9/._-]+)", "(/[A-Za-z0-9/._-]+)"')
_FIXED_ETC = re.compile(r'for name in \(((?:"[A-Za-z0-9/._-]+",? ?)+)\):\n\s+args \+= \["--ro-bind-try", f"/etc/\{name\}", f"/etc/\{name\}"\]')
_PROVIDERS = {"env": "env", "file": "file", "home": "file", "credential": "systemd-credential"}


class NotALauncher(ValueError):
    """A file that should be a launcher holds no CONFIG literal this reader understands."""


def launcher_config(text: str) -> dict[str, Any]:
    """The CONFIG literal of one launcher, as data."""
    match = _CONFIG.search(text)
    if match is None:
        raise NotALauncher("no CONFIG = {...} block")
    tree = ast.parse(match.group(0))
    statement = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.Dict):
        raise NotALauncher("CONFIG is not one dict literal")
    config = ast.literal_eval(statement.value)
    assert isinstance(config, dict)
    return config


def read_build(files: Mapping[str, str]) -> dict[str, Grants]:
    """Grants per server, for every launcher among ``files`` (name -> text)."""
    out: dict[str, Grants] = {}
    for name, text in sorted(files.items()):
        if not name.endswith(".py") or "/" in name:
            continue
        config = launcher_config(text)
        server = str(config["server"])
        out[server] = read_launcher(text, config, files.get(f"{server}.squid.conf"))
    return out


def read_launcher(text: str, config: Mapping[str, Any], squid: str | None) -> Grants:
    runtime = text[text.find("\n}\n"):]
    args = set(re.findall(r'"(--[a-z-]+)"', runtime))
    enforced: set[str] = set()
    mounts = tuple(sorted([*_fixed_mounts(runtime), *(_mount(m) for m in config["mounts"])]))
    enforced.add("mounts")
    if {"--unshare-all", "--clearenv"} <= args:
        enforced.update({"hidden-paths", "env"})
    identity = _identity(config, runtime, args)
    if identity.host_uid != 0 and not identity.capabilities:
        enforced.add("identity")
    egress = _egress(config, runtime, args, squid)
    if egress.mode != "direct":
        enforced.update({"egress-deny", "listeners"})
        if egress.mode == "proxy" and egress.default == "deny":
            enforced.add("egress-allowlist")
        if egress.mode == "proxy":
            enforced.add("metadata-blocking")
    secrets = tuple(sorted(_secret(s) for s in config["secrets"]))
    if secrets:
        enforced.add("secrets")
    limits = Limits(
        memory=config["memory_bytes"] or None,
        pids=config["pids"] or None,
        # The CPU rate of the launch's cgroup (cpus x 100 ms each 100 ms), when the runtime makes one.
        cpu_percent=int(config.get("cpu_millis") or 0) / 10 or None if "cpu.cfs_quota_us" in runtime else None,
        cpu_seconds=config["cpu_seconds"] or None,
        lifetime=float(config["lifetime_seconds"]) or None,
        idle_timeout=float(config["idle_seconds"]) or None,
    )
    for control, value in (("memory", limits.memory), ("pids", limits.pids), ("cpu", limits.cpu_percent or limits.cpu_seconds),
                           ("lifetime", limits.lifetime), ("idle-timeout", limits.idle_timeout)):
        if value:
            enforced.add(control)
    masks = tuple(config["masks"])
    if masks:
        enforced.add("process-policy")
    if config["audit"]:
        enforced.add("audit-log")
    env_set = [(str(n), str(v)) for n, v in config["setenv"]]
    if egress.mode == "proxy":
        port = _PROXY_PORT.search(runtime)
        proxy = f"http://127.0.0.1:{port.group(1) if port else ''}"
        env_set += [(variable, proxy) for variable in _proxy_variables(runtime)]
    return Grants(
        target="bwrap",
        server=str(config["server"]),
        mounts=mounts,
        env_set=tuple(env_set),
        env_inherit=tuple(config["inherit"]) if config["env_mode"] != "all" else (),
        env_inherit_all=config["env_mode"] == "all" or "--clearenv" not in args,
        secrets=secrets,
        egress=egress,
        identity=identity,
        limits=limits,
        masked_commands=masks,
        enforced=frozenset(enforced),
    )


def _fixed_mounts(runtime: str) -> list[MountGrant]:
    """What the runtime binds into every sandbox, read-only: /usr and a few files of /etc."""
    found = [MountGrant(target, "host", source, "ro") for source, target in _FIXED_BIND.findall(runtime)]
    etc = _FIXED_ETC.search(runtime)
    if etc is not None:
        found += [MountGrant(f"/etc/{name}", "host", f"/etc/{name}", "ro") for name in re.findall(r'"([^"]+)"', etc.group(1))]
    return found


def _mount(raw: Mapping[str, Any]) -> MountGrant:
    kind, mode, source, target = raw["kind"], raw["mode"], raw["source"], raw["target"]
    if kind == "scratch":
        return MountGrant(target, "tmpfs", "", mode, int(raw["size"]))
    if kind == "home":
        return MountGrant(target, "home", "~" if source in (".", "") else f"~/{source}", mode)
    if kind == "workspace":
        return MountGrant(target, "workspace", source, mode)
    return MountGrant(target, "host", source, mode)


def _secret(raw: Mapping[str, Any]) -> SecretLanding:
    provider, ref = raw["provider"], raw["ref"]
    if provider == "home":
        ref = f"~/{ref}"
    return SecretLanding(raw["name"], _PROVIDERS.get(provider, provider), ref, raw["env"], raw["file"])


def _identity(config: Mapping[str, Any], runtime: str, args: set[str]) -> Identity:
    uid, gid = int(config["uid"]), int(config["gid"])
    fallback = _FALLBACK.search(runtime)
    # Started as root, the launcher runs bwrap as uid (0 replaced by FALLBACK_ID); otherwise as the caller.
    stands_in = fallback is not None and "self.host_uid = config.uid or FALLBACK_ID" in runtime
    host_uid = (uid or int(fallback.group(1))) if stands_in and fallback is not None else uid
    dropped = "--cap-drop" in args and '"--cap-drop", "ALL"' in runtime
    return Identity(uid, gid, host_uid, frozenset() if dropped else frozenset({"ALL"}), "--disable-userns" in args)


def _egress(config: Mapping[str, Any], runtime: str, args: set[str], squid: str | None) -> EgressGrant:
    if config["share_net"] or "--unshare-all" not in args:
        return EgressGrant("direct", "allow", frozenset({ANY}), host_loopback=True)
    if config["proxy"]:
        if squid is None:
            return EgressGrant("none")  # the launcher refuses to start without its squid.conf
        return read_squid(squid)
    return EgressGrant("none")


def _proxy_variables(runtime: str) -> list[str]:
    match = _PROXY_VARIABLES.search(runtime)
    return re.findall(r'"([A-Za-z_]+)"', match.group(1)) if match else []
