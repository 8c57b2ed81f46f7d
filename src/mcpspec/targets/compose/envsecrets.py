"""Secrets compose reads from its own environment (``provider: env``), in a form both engines run.

A compose ``environment:`` secret source runs under docker compose, but podman-compose refuses
it at ``up`` ("uses environment source, which is not supported for runtime secrets"). So the
compose file declares such a secret as a ``file:`` under ``${MCPSPEC_SECRETS_DIR}``, and the
build writes ``mcpspec-compose.sh``: it runs a compose command (``docker compose ...`` or
``podman-compose ...``) after writing each value, read from its own environment, into a new
directory of its own in memory (mode 0700, never the build directory), unsets the variables,
and removes the directory when the command exits. Values pass only through shell builtins
(``printf``, ``:``), never a command line. A file is mode 0444: the container's user is not
the invoking user (and a rootless engine maps it to another uid), so only the directory keeps
other host users out; in the container it is a read-only bind at the secret's target.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcpspec.ir.plan import Plan, SecretGrant
from mcpspec.targets.base import Refused
from mcpspec.targets.common import header

WRAPPER_FILE = "mcpspec-compose.sh"
SECRETS_DIR = "${MCPSPEC_SECRETS_DIR:?run compose through ./mcpspec-compose.sh, which writes the secrets read from the environment}"
# The key that records, in the compose file, which variable a secret comes from (compose ignores x- keys).
ENV_KEY = "x-mcpspec-environment"
# The spec's own patterns (a secret's name, an env provider's ref): checked again, since both go into shell text.
_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# Variables the wrapper's own shell relies on: a secret read from one of them would change what the wrapper does
# (PATH finds the engine, IFS splits nothing here but is the shell's) or be clobbered by the wrapper's own.
_RESERVED = re.compile(r"PATH|IFS|MCPSPEC_SECRETS_DIR|mcpspec_[A-Za-z0-9_]*")
# The signals whose default action ends a shell (SIGKILL and SIGSTOP cannot be caught), with their Linux numbers.
_SIGNALS = (("HUP", 1), ("INT", 2), ("QUIT", 3), ("USR1", 10), ("USR2", 12), ("PIPE", 13), ("ALRM", 14), ("TERM", 15),
            ("XCPU", 24), ("XFSZ", 25), ("VTALRM", 26), ("PROF", 27))


def from_environment(grant: SecretGrant) -> bool:
    return grant.provider == "env"


def declaration(grant: SecretGrant) -> dict[str, str]:
    """The compose file's ``secrets:`` entry of a secret read from the environment."""
    _check(grant)
    return {"file": f"{SECRETS_DIR}/{grant.name}", ENV_KEY: grant.ref}


def wrapper(plan: Plan, grants: Sequence[SecretGrant]) -> str:
    """The wrapper that materialises ``grants`` (each once, by name) and runs a compose command."""
    unique = {grant.name: grant for grant in grants}
    for grant in unique.values():
        _check(grant)
    lines = [
        "#!/bin/sh",
        *header(plan, "the compose command wrapper for secrets read from the environment"),
        "# Usage: ./mcpspec-compose.sh docker compose -p RUN -f compose.yaml run --rm -T SERVER",
        "#        ./mcpspec-compose.sh podman-compose -p RUN -f compose.yaml up -d SERVER",
        "# Writes each secret below from this process's environment to a file in a new directory (0700, in",
        "# memory), unsets the variables, runs the command with MCPSPEC_SECRETS_DIR set, and removes the",
        "# directory when it exits. A service started detached keeps what it read at start: restart it",
        "# through this wrapper too.",
        "set -eu",
        'if [ $# -eq 0 ]; then echo "usage: $0 COMPOSE-COMMAND [ARG...]" >&2; exit 2; fi',
    ]
    lines += [
        "umask 077",
        # Every signal whose default ends the shell exits through the EXIT trap (after the command, when one runs),
        # set before the directory exists: a shell killed by its default action leaves the directory behind.
        "mcpspec_dir=",
        "trap '[ -z \"$mcpspec_dir\" ] || rm -rf -- \"$mcpspec_dir\"' EXIT",
        *(f"trap 'exit {128 + number}' {name}" for name, number in _SIGNALS),
        *_base_check(),
        'mcpspec_dir=$(mktemp -d "$mcpspec_base/mcpspec-secrets.XXXXXXXX")',
    ]
    for grant in unique.values():
        # An unset variable writes no file: commands that start nothing (down, ps, logs) still run, and a service
        # that uses the secret does not start (the engine names the missing file).
        lines += [
            f'if [ -n "${{{grant.ref}+set}}" ]; then',
            f"  {write_line(grant.ref, grant.name)}",
            f'  chmod 0444 "$mcpspec_dir/{grant.name}"',
            "else",
            f'  echo "mcpspec-compose.sh: {grant.ref} is not set, so secret {grant.name} is not written: a service that uses it does not start" >&2',
            "fi",
        ]
    lines += [
        "unset " + " ".join(dict.fromkeys(grant.ref for grant in unique.values())),
        'MCPSPEC_SECRETS_DIR=$mcpspec_dir',
        "export MCPSPEC_SECRETS_DIR",
        "mcpspec_status=0",
        '"$@" || mcpspec_status=$?',
        'exit "$mcpspec_status"',
    ]
    return "\n".join(lines) + "\n"


def _base_check() -> list[str]:
    """Shell lines that pick the directory the secrets' directory is made in, or refuse.

    Another user who can rename entries in it (a non-sticky directory writable by others, or one they
    own, or a link they can point elsewhere) could swap the new directory for one of theirs between
    mktemp and the first write: it must be an absolute path to a directory, not a link, of this user's
    or root's, writable by no one else or sticky (/tmp, /dev/shm)."""
    return [
        "mcpspec_base=${XDG_RUNTIME_DIR:-/dev/shm}",
        'case $mcpspec_base in /*) mcpspec_ls=$(ls -ldn -- "$mcpspec_base" 2>/dev/null || :) ;; *) mcpspec_ls= ;; esac',
        "case $mcpspec_ls in d????w*|d???????w*) case $mcpspec_ls in d????????[tT]*) ;; *) mcpspec_ls= ;; esac ;; esac",
        "mcpspec_owner=$(printf '%s\\n' \"$mcpspec_ls\" | awk '{print $3}')",
        'case $mcpspec_ls in d*) ;; *) mcpspec_owner=none ;; esac',
        'if [ "$mcpspec_owner" != 0 ] && [ "$mcpspec_owner" != "$(id -u)" ]; then',
        '  echo "mcpspec-compose.sh: $mcpspec_base is not a directory (not a link) of yours or root\'s that only you may write or that is sticky:'
        ' another user could swap the secrets\' directory; set XDG_RUNTIME_DIR to one" >&2',
        "  exit 1",
        "fi",
    ]


def write_line(variable: str, name: str) -> str:
    """The wrapper's line that writes secret ``name`` from ``variable`` (the reader looks for it verbatim)."""
    return f'printf %s "${variable}" > "$mcpspec_dir/{name}"'


def _check(grant: SecretGrant) -> None:
    if not _NAME.fullmatch(grant.name) or not _VARIABLE.fullmatch(grant.ref) or _RESERVED.fullmatch(grant.ref):
        raise Refused("secrets", (*grant.secret_path, "ref"), f"secret {grant.name!r}: {grant.ref!r} cannot be written in the compose wrapper safely")
