"""One server as Codex runs it: its permission profile and its `[mcp_servers]` entry.

The profile reads Codex's `:minimal` set (what a process needs to start: /usr, /etc,
/bin, /sbin, /lib*, /dev, /proc) and Codex's own helper directory, and each mount of
the spec at its host path (read for ro, write for rw); the network stays disabled.
The entry starts `codex sandbox --permission-profile mcpspec-SERVER -- COMMAND`.
Every value is checked here: a value TOML or Codex would read differently is refused.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import AGENT_TOKEN, RUN_TOKEN, EffectiveMount, EffectiveSandbox
from mcpspec.spec.models import MINIMAL_ENV
from mcpspec.targets.base import Gap, Refused

PROFILE_PREFIX = "mcpspec-"
# The run id of a workspace dir: one fixed directory per agent, as Codex has no run of its own to name.
RUN_ID = "codex"
# Codex makes its sandbox helper (a link to its own binary) here and runs it inside the sandbox.
HELPER_DIR = "~/.codex/tmp/arg0-linux"
# What Codex's `:minimal` grants: the runtime a command needs to start, read only.
MINIMAL = ":minimal"
# A server name Codex takes for `[mcp_servers.NAME]`, also the profile's name (no '.': `-c` splits on it).
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
# Codex reads `*`, `?`, `[`, `{` in a filesystem key as a glob: a path with one would grant a pattern.
_GLOB = re.compile(r"[*?\[\]{}]")
# The variables env.set may name: a shell could not pass another one through `env`.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
ENV = "/usr/bin/env"
PRLIMIT = "/usr/bin/prlimit"
TIMEOUT = "/usr/bin/timeout"
KILL_AFTER = 5  # seconds from SIGTERM to SIGKILL at max_lifetime
# Codex's filter allows keyctl, and the sandbox keeps the session keyring of whoever started Codex: join a new
# anonymous one (keyctl KEYCTL_JOIN_SESSION_KEYRING, NULL) before the server starts, so keys there are no longer its own.
# Perl is in /usr/bin wherever Debian's perl-base is (always); an unknown architecture stops here.
PERL = "/usr/bin/perl"
FRESH_KEYRING = (
    'use Config; my %nr = (x86_64 => 250, aarch64 => 219); my ($arch) = $Config{archname} =~ /^([^-]+)/; '
    'defined $nr{$arch} && syscall($nr{$arch}, 1, 0) >= 0 or die "mcpspec: cannot join a fresh session keyring: $!\n"; '
    'exec { $ARGV[0] } @ARGV or die "mcpspec: cannot start $ARGV[0]: $!\n";'
)
# A PATH for `env -i`, which otherwise leaves the server none (as bwrap's launcher adds PATH).
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True, slots=True)
class Served:
    """What the config file holds for one server."""

    name: str
    profile: dict[str, object]
    entry: dict[str, object]


def profile_name(server: str) -> str:
    return PROFILE_PREFIX + server


def text(value: str, path: SpecPath, what: str) -> str:
    """A string for the TOML file and the command line: anything UTF-8 carries, but NUL (no argument holds one)."""
    if "\x00" in value or any(unicodedata.category(char) == "Cs" for char in value):
        raise Refused("process-policy", path, f"{what} {value!r} has a NUL byte or an unpaired surrogate: no command line carries it")
    return value


def mount_key(mount: EffectiveMount, agent: str) -> str:
    """The mount's host path (absolute or ``~/...``) as a key of the profile's filesystem table."""
    key = mount.location.replace(AGENT_TOKEN, agent).replace(RUN_TOKEN, RUN_ID)
    if not key.startswith(("/", "~/")):
        raise Refused("mounts", mount.path, f"mount {key!r}: a profile grants an absolute path or one under ~/, never the whole home directory")
    text(key, mount.path, "mount")
    if _GLOB.search(key) or any(unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") for char in key):
        raise Refused("mounts", mount.path, f"mount {key!r}: Codex reads *, ?, [ and {{ in a path as a glob, and a control character is no path "
                      "it would grant as written")
    if any(part in (".", "..", "") for part in key.split("/")[1:]):
        raise Refused("mounts", mount.path, f"mount {key!r} is not a normalized path")
    return key


def filesystem(sandbox: EffectiveSandbox) -> tuple[dict[str, str], list[Gap]]:
    """The profile's filesystem table and the mounts it gives in part."""
    agent = sandbox.agents[0] if sandbox.agents else "agent"
    table = {MINIMAL: "read", HELPER_DIR: "read"}
    gaps: list[Gap] = []
    for mount in sandbox.mounts:
        key = mount_key(mount, agent)
        if key in table:
            raise Refused("mounts", mount.path, f"mount {key!r} is granted twice (or is a path the runtime already reads)")
        table[key] = "write" if mount.mode == "rw" else "read"
        if mount.kind == "tmpfs":
            gaps.append(Gap("mounts", "partial", mount.path,
                            f"mounts ro/rw: {key} is a directory on disk, not a tmpfs of {mount.size} bytes: Codex makes no tmpfs; nothing empties it or limits its size"))
        if mount.target != key:
            gaps.append(Gap("mounts", "partial", mount.path,
                            f"mounts ro/rw: the server finds {key} at that path, not at {mount.target}: codex sandbox binds no path elsewhere"))
    return table, gaps


def workdir(sandbox: EffectiveSandbox) -> str | None:
    """The workdir's host path, where a mount holds it (Codex starts the command there); None otherwise."""
    if sandbox.workdir is None:
        return None
    agent = sandbox.agents[0] if sandbox.agents else "agent"
    for mount in sandbox.mounts:
        if not mount_key(mount, agent).startswith("~") and (sandbox.workdir == mount.target or sandbox.workdir.startswith(mount.target.rstrip("/") + "/")):
            return mount_key(mount, agent) + sandbox.workdir[len(mount.target.rstrip("/")):]
    return None


def command(sandbox: EffectiveSandbox) -> list[str]:
    """What runs inside the sandbox: a fresh session keyring, the limits (`prlimit`, `timeout`), then the server's
    environment and command."""
    return [PERL, "-e", FRESH_KEYRING, *limits(sandbox), *environment(sandbox)]


def limits(sandbox: EffectiveSandbox) -> list[str]:
    """RLIMIT_AS and RLIMIT_NPROC of the server (prlimit), and a `timeout` at max_lifetime: util-linux and coreutils in /usr/bin."""
    words: list[str] = []
    resources = sandbox.resources
    if resources.memory is not None or resources.pids is not None:
        words.append(PRLIMIT)
        if resources.memory is not None:
            words.append(f"--as={resources.memory}")
        if resources.pids is not None:
            words.append(f"--nproc={resources.pids}")
        words.append("--")
    lifetime = sandbox.lifecycle.max_lifetime
    if lifetime is not None:
        words += [TIMEOUT, f"--kill-after={KILL_AFTER}", f"{max(1, math.ceil(lifetime))}"]
    return words


def environment(sandbox: EffectiveSandbox) -> list[str]:
    """`env -i` with the inherited variables the host has and env.set (and PATH when neither names it),
    so the server gets no variable Codex passes beyond the spec's (inherit all: `env` with env.set); then the command."""
    if sandbox.command_is_shell:
        raise Refused("process-policy", sandbox.origin("command"), "a command written as one shell string: codex-profile runs an argument list "
                      "(write the command as a list)")
    argv = [text(word, sandbox.origin("command"), "command word") for word in sandbox.command]
    if not argv:
        raise Refused("process-policy", sandbox.origin("command"), "the server has no command")
    everything = sandbox.env.inherit == "all"
    inherited = inherited_names(sandbox)
    values = dict(sandbox.env.set)
    if "PATH" not in inherited and not everything:
        values.setdefault("PATH", DEFAULT_PATH)
    if everything and not values:
        return argv
    assignments = []
    for name, value in values.items():
        if not _ENV_NAME.match(name):
            raise Refused("env", sandbox.origin("env.set"), f"variable {name!r} is no name `env` can set")
        assignments.append(f"{name}={text(value, sandbox.origin('env.set'), 'value of ' + name)}")
    if "=" in argv[0]:  # env would read it as one more variable
        raise Refused("process-policy", sandbox.origin("command"), f"command {argv[0]!r} has '=': `env` would read it as a variable")
    if everything:  # env.set inside the sandbox: an entry's `env` is set on `codex sandbox` itself, outside it
        return [ENV, *assignments, *argv]
    if not inherited:
        return [ENV, "-i", *assignments, *argv]
    # The names are checked identifiers: the script is fixed text, every value reaches it as an argument.
    passed = " ".join(f'${{{name}+"{name}=${name}"}}' for name in inherited)
    return ["/bin/sh", "-c", f'exec {ENV} -i {passed} "$@"', "sh", *assignments, *argv]


def inherited_names(sandbox: EffectiveSandbox) -> tuple[str, ...]:
    """The host variables env.inherit passes by name (minimal: the documented four)."""
    inherit = sandbox.env.inherit
    names = inherit if isinstance(inherit, tuple) else MINIMAL_ENV if inherit == "minimal" else ()
    for name in names:
        if not _ENV_NAME.match(name):
            raise Refused("env", sandbox.origin("env.inherit"), f"variable {name!r} is no name a shell can pass through")
    return tuple(names)


def served(sandbox: EffectiveSandbox, codex: str = "codex") -> tuple[Served, list[Gap]]:
    """The server's profile and entry, and the gaps they leave; raises Refused for a value they cannot carry."""
    if not _SERVER_NAME.match(sandbox.name):
        raise Refused("process-policy", sandbox.path, f"Codex cannot name a server or profile {sandbox.name!r} (letters, digits, '_' and '-')")
    table, gaps = filesystem(sandbox)
    profile: dict[str, object] = {"filesystem": table, "network": {"enabled": False}}
    entry: dict[str, object] = {"command": codex, "args": ["sandbox", "--permission-profile", profile_name(sandbox.name), "--", *command(sandbox)]}
    if inherited_names(sandbox):  # Codex passes these to the entry; `env -i` inside keeps only them
        entry["env_vars"] = list(inherited_names(sandbox))
    cwd = workdir(sandbox)
    if cwd is not None:
        entry["cwd"] = cwd
    if sandbox.unlisted_tools == "deny" and sandbox.tools:
        entry["enabled_tools"] = [text(name, (*sandbox.path, "tools"), "tool") for name in sorted(sandbox.tools)]
    return Served(sandbox.name, profile, entry), gaps
