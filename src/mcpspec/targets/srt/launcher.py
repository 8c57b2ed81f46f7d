"""One server's launcher (``<server>.sh``): a POSIX shell script that starts it under srt.

It refuses to start as root; checks that no mount path is a link or lies under one
(srt would show what the link leads to) and that neither the launcher nor srt lies in a
writable mount (the server could rewrite its own rules for the next run); re-allows
reading srt's own seccomp helper (srt runs it inside the sandbox); then runs srt with
an environment of the declared variables only, the settings on descriptor 3, and the
server under ``prlimit`` for its memory and process limits. Every value of the spec
is one shell word quoted by ``escape.sh``.
"""

from __future__ import annotations

import math
import re

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import MINIMAL_ENV
from mcpspec.targets.base import Refused
from mcpspec.targets.common import header
from mcpspec.targets.escape import sh, sh_words
from mcpspec.targets.srt.settings import under

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
SETTINGS_SUFFIX = ".srt-settings.json"
# How long srt has to end the server after timeout(1) asks it to before timeout(1) kills it: the ask
# comes this much before max_lifetime, so the kill comes at max_lifetime at the latest.
KILL_AFTER = 10
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# srt (node), bubblewrap, socat, ripgrep and which run on the host with the environment srt is started with, the server's:
# these change what they load, resolve or where srt sends traffic (a parent proxy skips srt's resolved-address checks).
_HOST_STEERING = re.compile(r"^(LD_.*|GLIBC_TUNABLES|GCONV_PATH|LOCPATH|NLSPATH|HOSTALIASES|RES_OPTIONS|LOCALDOMAIN|NODE_(?!ENV\Z).*|"
                            r"OPENSSL_.*|RIPGREP_CONFIG_PATH|SRT_.*|CLAUDE_TMPDIR|CLAUDE_CODE_TMPDIR|(HTTPS?|ALL|NO)_PROXY)\Z",
                            re.IGNORECASE)
# Adds to allowRead srt's own seccomp helper (its vendor/seccomp directory), which srt runs inside the
# sandbox, and srt's private temporary directory, where the sockets of its proxy bridge are (srt binds
# them into the sandbox before it applies denyRead, so under a denied /tmp they would be hidden).
# The temporary directory is also in denyWrite: under a writable mount (/tmp rw) the server would swap a proxy socket for a
# link to any Unix socket of the host, and srt's bridge would connect it there, past the proxy and the seccomp filter.
_MERGE = ('const fs = require("fs"); const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); '
          'for (const path of process.argv.slice(2)) s.filesystem.allowRead.push({path, literal: true}); '
          's.filesystem.denyWrite.push({path: process.argv[process.argv.length - 1], literal: true}); '
          'process.stdout.write(JSON.stringify(s));')


def refuse_writable_tools(sandbox: EffectiveSandbox) -> None:
    """srt finds bwrap, socat and rg on the host's PATH, outside the sandbox: a server that writes there would choose
    the next run's sandbox. srt keeps its proxy's sockets under /tmp: a server that writes there would redirect them."""
    for mount in sandbox.mounts:
        if mount.writable and any(under(directory, mount.target) for directory in DEFAULT_PATH.split(":")):
            raise Refused("mounts", mount.path, f"{mount.target} is writable and holds part of {DEFAULT_PATH}, where srt finds "
                          "bubblewrap: the server would choose the next run's sandbox")
        if mount.writable and under("/tmp", mount.target):
            raise Refused("mounts", mount.path, f"{mount.target} is writable and holds /tmp, where srt keeps the sockets of its proxy "
                          "(in its temporary directory, its own and every other server's): the server would swap one for a link to any "
                          "Unix socket of the host, which srt's bridge would connect")



def _path_check(srt_path: str, writable: list[str]) -> list[str]:
    """Lines refusing a PATH, as srt gets it, with a directory in a writable mount: srt finds bubblewrap, socat, ripgrep and
    which there and runs them on the host, so a program the server planted would run outside any sandbox."""
    return [
        "# srt runs bubblewrap, socat, ripgrep and which from the PATH it gets (the server's), on the host.",
        f"srt_path={srt_path}",
        'case ":$srt_path:" in *::*) refuse "the PATH srt gets holds an empty entry (the working directory)" ;; esac',
        "set -f; saved_ifs=$IFS; IFS=:",
        "for dir in $srt_path; do",
        '    case "$dir" in /*) ;; *) refuse "the PATH srt gets holds $dir, not an absolute directory" ;; esac',
        '    real=$(/usr/bin/readlink -f -- "$dir") || real=$dir',
        f"    for path in {sh_words(writable)}; do",
        '        case "$real/" in "$path"/*) refuse "$dir, on the PATH srt gets, lies in the writable mount $path" ;; esac',
        "    done",
        "done",
        "IFS=$saved_ifs; set +f",
    ]


def environment(sandbox: EffectiveSandbox) -> tuple[list[tuple[str, str]], list[str], bool]:
    """(variables set, host variables passed by name, whole host environment passed)."""
    env = sandbox.env
    if env.inherit == "all":
        return sorted(env.set.items()), [], True
    inherit = sorted(env.inherit) if isinstance(env.inherit, tuple) else sorted(MINIMAL_ENV) if env.inherit == "minimal" else []
    declared = dict(env.set)
    if "PATH" not in declared and "PATH" not in inherit:
        declared["PATH"] = DEFAULT_PATH
    for name in [*declared, *inherit]:
        if not _ENV_NAME.match(name):
            raise Refused("env", sandbox.origin("env"), f"the launcher cannot pass the variable {name!r}: a name is letters, digits and _")
    return sorted(declared.items()), [name for name in inherit if name not in declared], False


def launcher(plan: Plan, sandbox: EffectiveSandbox) -> str:
    if sandbox.command_is_shell:
        raise Refused("process-policy", (*sandbox.path, "command"), "a command given as one string is run by a shell; give it as a list of words")
    if not sandbox.command:
        raise Refused("process-policy", sandbox.path, f"server {sandbox.name!r} has no command to launch")
    name = sh(sandbox.name)
    refuse_writable_tools(sandbox)
    mounts = [m.target for m in sandbox.mounts]
    writable = [m.target for m in sandbox.mounts if m.writable]
    declared, inherited, inherit_all = environment(sandbox)
    steering = sorted(name for name in [*dict(declared), *inherited] if _HOST_STEERING.match(name))
    if steering:
        raise Refused("env", sandbox.origin("env"), f"srt, node and bubblewrap run on the host with the server's environment: {', '.join(steering)} "
                      "would change what they load or where srt sends traffic there (leave it out)")
    assignments = [sh(f"{key}={value}") for key, value in declared]
    if inherit_all:
        env_words = ["/usr/bin/env", *assignments]
    else:  # a host variable passed by name only when it is set: ${NAME+"NAME=$NAME"} is one word or none
        env_words = ["/usr/bin/env", "-i", *assignments, *(f'${{{key}+"{key}=${key}"}}' for key in inherited)]
    lifetime = sandbox.lifecycle.max_lifetime
    timeout: list[str] = []
    if lifetime is not None:
        total = max(2, math.floor(lifetime))
        grace = min(KILL_AFTER, total // 2)
        timeout = ["/usr/bin/timeout", f"--kill-after={grace}", str(total - grace)]
    limits = [f"--as={sandbox.resources.memory}"] if sandbox.resources.memory is not None else []
    limits += [f"--nproc={sandbox.resources.pids}"] if sandbox.resources.pids is not None else []
    prlimit = ["/usr/bin/prlimit", *limits, "--"] if limits else []
    workdir = sandbox.workdir or "/"
    srt_path = sh(dict(declared)["PATH"]) if "PATH" in dict(declared) else '"${PATH-}"'
    lines = [
        "#!/bin/sh",
        *header(plan, f"the launcher of MCP server {sandbox.name} under sandbox-runtime (srt)"),
        f"# Use this file as the server's stdio command. srt enforces {sandbox.name}{SETTINGS_SUFFIX} beside it.",
        "set -eu",
        f"refuse() {{ printf 'mcpspec-srt: %s: %s\\n' {name} \"$1\" >&2; exit 125; }}",
        '[ "$(/usr/bin/id -u)" != 0 ] || refuse "refusing to start as root: start it as the user the server should run as"',
        'here=$(CDPATH= cd -- "$(/usr/bin/dirname -- "$0")" && pwd -P) || refuse "cannot find the directory of this launcher"',
        'srt=$(command -v srt) || refuse "srt is not on PATH (npm install -g @anthropic-ai/sandbox-runtime@0.0.83)"',
        'node=$(command -v node) || refuse "node is not on PATH"',
        'case "$node" in *=*) refuse "the path of node holds =, which env would read as a variable" ;; esac',
        'cli=$(/usr/bin/readlink -f -- "$srt") || refuse "cannot resolve $srt"',
        'package=$(CDPATH= cd -- "$(/usr/bin/dirname -- "$cli")/.." && pwd -P) || refuse "cannot find the directory srt is installed in"',
        'seccomp=$(CDPATH= cd -- "$package/vendor/seccomp" && pwd -P) || refuse "srt has no vendor/seccomp directory in $package"',
        "# A mount path that is a link, or lies under one, would show the sandbox what the link leads to.",
        *([f"for path in {sh_words(mounts)}; do",
           '    [ "$(/usr/bin/readlink -f -- "$path")" = "$path" ] || refuse "mount path $path is a symbolic link or lies under one"',
           "done"] if mounts else []),
        "# Neither these rules nor srt may lie where the server writes: it would rewrite them for the next run.",
        *([f"for path in {sh_words(writable)}; do",
           '    case "$here/" in "$path"/*) refuse "this launcher lies in the writable mount $path" ;; esac',
           '    case "$package/" in "$path"/*) refuse "srt lies in the writable mount $path" ;; esac',
           '    case "$(/usr/bin/readlink -f -- "$node")/" in "$path"/*) refuse "node lies in the writable mount $path" ;; esac',
           "done",
           *_path_check(srt_path, writable)] if writable else []),
        "# srt always lets the sandbox write /tmp/claude when it exists: a host directory others write too.",
        '[ ! -e /tmp/claude ] && [ ! -L /tmp/claude ] || refuse "/tmp/claude exists: srt would let the server write it (remove it)"',
        'tmp=$(/usr/bin/mktemp -d /tmp/mcpspec-srt.XXXXXXXXXX) || refuse "cannot make a temporary directory"',
        "trap '/usr/bin/rm -rf -- \"$tmp\"' EXIT",
        "trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM",
        f'settings=$("$node" -e {sh(_MERGE)} "$here"/{sh(sandbox.name + SETTINGS_SUFFIX)} "$seccomp" "$tmp") || refuse "cannot read its settings"',
        f'cd -- {sh(workdir)} || refuse "cannot enter the working directory"',
        " ".join([*env_words, '"TMPDIR=$tmp"', *timeout, '"$node" "$cli" --settings /dev/fd/3 --', sh_words([*prlimit, *sandbox.command]),
                  "3<<MCPSPEC_SETTINGS"]),
        "$settings",
        "MCPSPEC_SETTINGS",
    ]
    return "\n".join(lines) + "\n"
