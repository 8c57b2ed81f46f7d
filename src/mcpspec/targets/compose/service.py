"""One server as compose data: its service, and its egress proxy's service when it has an allowlist.

Everything is plain Python data that ``yaml.safe_dump`` writes (no text templating).
Compose interpolates ``$`` in every string, so each value taken from the spec goes
through :func:`literal` (``$`` doubled); the only interpolations are the ones written
here: ``${MCPSPEC_RUN_DIR:?...}`` (the run's directory) and ``${HOME:?...}`` (the invoking
user's home). Paths that the engines' own mount syntax would split (``,`` ``:``) are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan, SecretGrant
from mcpspec.spec.models import IMAGE_ENV, MINIMAL_ENV, HttpTransport
from mcpspec.targets.base import BuildOptions, Refused
from mcpspec.targets.compose.envsecrets import declaration, from_environment
from mcpspec.targets.compose.links import PROXY_PORT, hardening, http_port, link_service, port_service, proxy_command, socket_volume, socket_volume_declaration
from mcpspec.targets.compose.syscalls import seccomp_opt, server_file
from mcpspec.targets.egress import egress_plan

RUN_DIR = "${MCPSPEC_RUN_DIR:?set MCPSPEC_RUN_DIR to the run's directory}"
HOME = "${HOME:?HOME must be set}"
SHIM_FILE = "mcpspec-entrypoint.sh"
SHIM_TARGET = "/mcpspec/entrypoint.sh"
ENV_SECRET_DIR = "/run/secrets/mcpspec-env"
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"  # the link's port in the server's own namespace
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
SQUID_CONF = "/etc/mcpspec/squid.conf"
SCRATCH = "/tmp"
SCRATCH_SIZE = 64 * 2**20
# Variables a container gets from the host for inherit: minimal (PATH and HOME come from the image).
MINIMAL_INHERIT = tuple(name for name in MINIMAL_ENV if name not in IMAGE_ENV)
# Providers compose can hand over: a file on the host, or a variable of compose's own environment.
PROVIDERS = ("file", "env")
# Letters, digits and _@+=./- only: podman-compose joins a mount into `--mount type=bind,source=...`
# and `--volume SRC:DST:ro`, where a comma or a colon would start another option.
_PATH_SAFE = re.compile(r"^/[A-Za-z0-9_@+=./-]*\Z")
_HOME_SAFE = re.compile(r"^[A-Za-z0-9_@+=./-]+\Z")


def literal(value: str) -> str:
    """A string compose reads back exactly (no ``${...}`` interpolation)."""
    return value.replace("$", "$$")


def container_path(value: str, path: tuple[Any, ...], control: str = "mounts") -> str:
    if not _PATH_SAFE.match(value) or "//" in value or (value != "/" and (value.endswith("/") or any(p in (".", "..") for p in value.split("/")))):
        raise Refused(control, path, f"path {value!r} cannot be written in a compose mount safely (only normalized absolute paths of letters, digits and _@+=./- are allowed)")
    return value


def host_source(kind: str, source: str, path: tuple[Any, ...], control: str = "mounts") -> str:
    """Where a bind mount or a secret file comes from, as compose reads it."""
    if kind == "home":
        if source == ".":
            return HOME
        if not _HOME_SAFE.match(source) or any(p in ("", ".", "..") for p in source.split("/")):
            raise Refused(control, path, f"path ~/{source!r} cannot be written in a compose mount safely")
        return f"{HOME}/{source}"
    return container_path(source, path, control)


@dataclass(frozen=True, slots=True)
class Names:
    """The compose names of one server's parts (``_`` never appears in a spec name, so none collide)."""

    service: str
    proxy: str
    link: str  # owns the server's network namespace (loopback only)
    port: str  # publishes an HTTP server's port
    sockets: str  # the helpers' socket volume
    public: str  # the port service's network
    outer: str  # the network that reaches out (the proxy's, or a direct server's)
    squid_file: str


def names(server: str) -> Names:
    return Names(server, f"{server}_egress", f"{server}_link", f"{server}_port", f"{server}_sockets", f"{server}_pub", f"{server}_out", f"{server}.squid.conf")


def has_proxy(sandbox: EffectiveSandbox, options: BuildOptions) -> bool:
    return egress_plan(sandbox).mode == "proxy" and options.proxy_image is not None


def publishes(sandbox: EffectiveSandbox, options: BuildOptions) -> bool:
    """Whether an HTTP server with egress denied or an allowlist gets its port published through the link."""
    return egress_plan(sandbox).mode != "direct-open" and http_port(sandbox) is not None and options.proxy_image is not None


def linked(sandbox: EffectiveSandbox, options: BuildOptions) -> bool:
    """Whether the server lives in its link's network namespace (else: network_mode none, or direct)."""
    return has_proxy(sandbox, options) or publishes(sandbox, options)


def security_opt(sandbox: EffectiveSandbox) -> list[str]:
    """The server's: no new privileges, and its syscall filter."""
    return ["no-new-privileges:true", seccomp_opt(server_file(sandbox.name))]


def shim_args(sandbox: EffectiveSandbox) -> list[str]:
    """The entrypoint shim's options for this server (empty: it runs without the shim)."""
    args = []
    if sandbox.lifecycle.max_lifetime is not None:
        args.append(f"lifetime={max(1, int(sandbox.lifecycle.max_lifetime))}")
    args += [f"{grant.env}={ENV_SECRET_DIR}/{grant.env}" for grant in delivered(sandbox) if grant.env is not None]
    return args


def delivered(sandbox: EffectiveSandbox) -> list[SecretGrant]:
    """The secrets compose hands over (the others are gaps)."""
    return [grant for grant in sandbox.secrets if grant.provider in PROVIDERS]


def service(plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> dict[str, Any]:
    """The server's service; raises Refused for a value compose cannot carry."""
    if sandbox.image is None:
        raise Refused("image", sandbox.origin("image"), f"server {sandbox.name!r} names no image: a compose service runs an image (give one, pinned by digest)")
    if sandbox.command_is_shell:
        raise Refused("process-policy", (*sandbox.path, "command"), "a command given as one string is run by a shell; give it as a list of words")
    identity = sandbox.identity
    if identity.uid == 0 or identity.gid == 0:
        raise Refused("identity", sandbox.origin("runtime.user"),
                      "runtime.user 0: root in a container is root on the host under a rootful engine; give a non-zero uid")
    own = names(sandbox.name)
    shim = shim_args(sandbox)
    command = [literal(arg) for arg in sandbox.command]
    if shim and not command:
        raise Refused("secrets" if sandbox.secrets else "lifetime", (*sandbox.path, "command"),
                      "the compose target starts the server through its entrypoint shim (max_lifetime, secrets as env) and needs its command")
    svc: dict[str, Any] = {"image": sandbox.image}
    if shim:
        svc["entrypoint"] = ["/bin/sh", SHIM_TARGET, *shim, "--", *command]
    elif command:
        svc["entrypoint"] = command
    if sandbox.workdir is not None:
        svc["working_dir"] = literal(container_path(sandbox.workdir, sandbox.origin("workdir"), "mounts"))
    svc["user"] = f"{identity.uid}:{identity.gid}"
    svc["read_only"] = sandbox.read_only_root
    svc["cap_drop"] = ["ALL"]
    svc["security_opt"] = security_opt(sandbox)
    resources = sandbox.resources
    if resources.memory is not None:
        svc["mem_limit"] = resources.memory
        svc["memswap_limit"] = resources.memory
    if resources.cpus is not None:
        svc["cpus"] = resources.cpus
    if resources.pids is not None:
        svc["pids_limit"] = resources.pids
    if not isinstance(sandbox.transport, HttpTransport):
        svc["stdin_open"] = True
    svc["restart"] = "no"
    svc["labels"] = {"mcpspec.project": plan.project, "mcpspec.server": sandbox.name, "mcpspec.agents": ",".join(sandbox.agents)}
    environment = _environment(sandbox, options)
    if environment:
        svc["environment"] = environment
    volumes = _volumes(sandbox, bool(shim))
    svc["volumes"] = volumes
    secrets = [_secret_use(grant) for grant in delivered(sandbox)]
    if secrets:
        svc["secrets"] = secrets
    _network(svc, sandbox, own, options)
    return svc


def _environment(sandbox: EffectiveSandbox, options: BuildOptions) -> list[str]:
    env = [f"{name}={literal(value)}" for name, value in sandbox.env.set.items()]
    if has_proxy(sandbox, options):
        env = [item for item in env if item.split("=", 1)[0] not in PROXY_ENV]
        env += [f"{name}={PROXY_URL}" for name in PROXY_ENV]
    inherit = sandbox.env.inherit
    passed = inherit if isinstance(inherit, tuple) else MINIMAL_INHERIT if inherit == "minimal" else ()
    taken = {item.split("=", 1)[0] for item in env}
    return env + [name for name in passed if name not in taken]


def _volumes(sandbox: EffectiveSandbox, shim: bool) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = []
    targets = set()
    for mount in sandbox.mounts:
        volumes.append(_volume(mount))
        targets.add(mount.target)
    if SCRATCH not in targets:
        volumes.append({"type": "tmpfs", "target": SCRATCH, "tmpfs": {"size": SCRATCH_SIZE}})
    if shim:
        volumes.append({"type": "bind", "source": f"./{SHIM_FILE}", "target": SHIM_TARGET, "read_only": True})
    return volumes


def _volume(mount: EffectiveMount) -> dict[str, Any]:
    target = container_path(mount.target, mount.path)
    read_only = not mount.writable
    if mount.kind == "tmpfs":
        return {"type": "tmpfs", "target": target, "read_only": read_only, "tmpfs": {"size": mount.size}}
    if mount.kind == "workspace":
        if not _HOME_SAFE.match(mount.source):
            raise Refused("mounts", mount.path, f"workspace dir {mount.source!r} cannot be written in a compose mount safely")
        source = f"{RUN_DIR}/{mount.source}"
    else:
        source = host_source(mount.kind, mount.source, mount.path)
    return {"type": "bind", "source": source, "target": target, "read_only": read_only}


def _secret_use(grant: SecretGrant) -> dict[str, Any]:
    target = f"{ENV_SECRET_DIR}/{grant.env}" if grant.env is not None else container_path(grant.file or "", grant.path, "secrets")
    return {"source": grant.name, "target": target}


def secret_declaration(grant: SecretGrant) -> dict[str, str]:
    """The top-level ``secrets:`` entry compose reads this secret from."""
    if from_environment(grant):  # podman-compose refuses an environment: source; the wrapper writes a file
        return declaration(grant)
    assert grant.source is not None
    return {"file": host_source("home" if grant.source.in_home else "host", grant.source.path, (*grant.secret_path, "ref"), "secrets")}


def _network(svc: dict[str, Any], sandbox: EffectiveSandbox, own: Names, options: BuildOptions) -> None:
    egress = egress_plan(sandbox)
    http = isinstance(sandbox.transport, HttpTransport)
    if egress.mode == "direct-open":
        svc["networks"] = [own.outer]
        port = sandbox.transport.port if isinstance(sandbox.transport, HttpTransport) else None
        if port is not None:
            svc["ports"] = [f"127.0.0.1:{port}:{port}"]
    elif linked(sandbox, options):
        svc["network_mode"] = f"service:{own.link}"
        helpers = [own.link]
        if has_proxy(sandbox, options):
            helpers.append(own.proxy)
        if publishes(sandbox, options):
            helpers.append(own.port)
        svc["depends_on"] = helpers
    else:
        svc["network_mode"] = "none"
    if http and isinstance(sandbox.transport, HttpTransport) and sandbox.transport.port is not None:
        url = f"http://127.0.0.1:{sandbox.transport.port}/"
        svc["healthcheck"] = {"test": ["CMD", "curl", "-s", "-o", "/dev/null", url], "interval": "30s", "timeout": "5s", "retries": 3}


def networks(sandbox: EffectiveSandbox, options: BuildOptions) -> dict[str, dict[str, Any]]:
    """The networks this server's services use."""
    own = names(sandbox.name)
    egress = egress_plan(sandbox)
    nets: dict[str, dict[str, Any]] = {}
    if egress.mode == "direct-open" or has_proxy(sandbox, options):
        nets[own.outer] = {}
    if publishes(sandbox, options):
        nets[own.public] = {}
    return nets


def volumes(sandbox: EffectiveSandbox, options: BuildOptions) -> dict[str, dict[str, Any]]:
    """The top-level volumes this server's services use: its helpers' socket directory."""
    return {names(sandbox.name).sockets: socket_volume_declaration()} if linked(sandbox, options) else {}


def helper_services(plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> dict[str, dict[str, Any]]:
    """The server's helper services: its link, its port service and its egress proxy, as it needs them."""
    if not linked(sandbox, options):
        return {}
    image = options.proxy_image
    assert image is not None
    own = names(sandbox.name)
    helpers = {own.link: link_service(plan, sandbox, image, own.sockets, has_proxy(sandbox, options))}
    if publishes(sandbox, options):
        helpers[own.port] = port_service(plan, sandbox, image, own.sockets, own.public, own.link)
    if has_proxy(sandbox, options):
        helpers[own.proxy] = proxy_service(plan, sandbox, image)
    return helpers


def proxy_service(plan: Plan, sandbox: EffectiveSandbox, image: str) -> dict[str, Any]:
    """The squid that enforces the server's allowlist: the only service on its network; the server reaches
    it through its link's socket."""
    own = names(sandbox.name)
    svc: dict[str, Any] = {"image": image, "entrypoint": proxy_command(SQUID_CONF)}
    svc.update(hardening(plan, sandbox, "egress-proxy"))
    svc["volumes"] = [
        {"type": "bind", "source": f"./{own.squid_file}", "target": SQUID_CONF, "read_only": True},
        {"type": "tmpfs", "target": SCRATCH, "tmpfs": {"size": SCRATCH_SIZE}},
        socket_volume(own.sockets),
    ]
    svc["networks"] = [own.outer]
    return svc


# access_log names the logformat that the base of the configuration defines, so it comes last.
SQUID_LOG = "access_log stdio:/dev/stdout mcpspec\n"


def squid_runtime() -> list[str]:
    """The lines of the proxy's squid.conf that place it in its container."""
    return [
        f"http_port 127.0.0.1:{PROXY_PORT}",
        "pid_filename none",
        "cache_log stdio:/dev/stderr",
        "coredump_dir /tmp",
    ]
