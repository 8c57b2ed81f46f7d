"""Read a ``docker run`` (or ``podman run``) command line: its options, the image, the image's
arguments; and which options hand the container a piece of the host.

Used by the importer (findings on a client's ``docker run``) and by lint (SP010), so both read
the same flags the same way: ``--flag value``, ``--flag=value``, short flags (``-v SRC:DST``,
``-vSRC:DST``, ``-itv SRC:DST``), all stopped at the image name (or at ``--``).
"""

from __future__ import annotations

import csv
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

ENGINES = frozenset({"docker", "podman", "nerdctl"})
# Programs that start the next word (with their own options first): the engine may sit behind them.
_LAUNCHERS = frozenset({"sudo", "doas", "env", "exec", "nohup", "command", "nice", "ionice", "setsid", "stdbuf", "timeout"})

# Options of `docker run` / `podman run` that take a value (written apart or after `=`).
_VALUE_LONG = frozenset(
    ["add-host", "annotation", "arch", "attach", "authfile", "blkio-weight", "blkio-weight-device", "cap-add", "cap-drop", "cgroup-conf", "cgroup-parent", "cgroupns", "cgroups", "cidfile", "chrootdirs", "conmon-pidfile", "cpu-count", "cpu-percent", "cpu-period", "cpu-quota", "cpu-rt-period", "cpu-rt-runtime", "cpu-shares", "cpus", "cpuset-cpus", "cpuset-mems", "creds", "decryption-key", "detach-keys", "device", "device-cgroup-rule", "device-read-bps", "device-read-iops", "device-write-bps", "device-write-iops", "dns", "dns-opt", "dns-option", "dns-search", "domainname", "entrypoint", "env", "env-file", "env-merge", "expose", "gidmap", "gpus", "group-add", "group-entry", "health-cmd", "health-interval", "health-log-destination", "health-max-log-count", "health-max-log-size", "health-on-failure", "health-retries", "health-start-interval", "health-start-period", "health-startup-cmd", "health-startup-interval", "health-startup-retries", "health-startup-success", "health-startup-timeout", "health-timeout", "hostname", "hostuser", "image-volume", "init-path", "io-maxbandwidth", "io-maxiops", "ip", "ip6", "ipc", "isolation", "kernel-memory", "label", "label-file", "link", "link-local-ip", "log-driver", "log-opt", "mac-address", "memory", "memory-reservation", "memory-swap", "memory-swappiness", "mount", "name", "net", "net-alias", "network", "network-alias", "oom-score-adj", "os", "passwd-entry", "personality", "pid", "pidfile", "pids-limit", "platform", "pod", "pod-id-file", "preserve-fds", "preserve-fd", "publish", "pull", "rdt-class", "requires", "restart", "retry", "retry-delay", "runtime", "seccomp-policy", "sdnotify", "secret", "security-opt", "shm-size", "shm-size-systemd", "stop-signal", "stop-timeout", "storage-opt", "subgidname", "subuidname", "sysctl", "systemd", "timeout", "tmpfs", "tz", "uidmap", "ulimit", "umask", "unsetenv", "user", "userns", "uts", "variant", "volume", "volume-driver", "volumes-from", "workdir"]
)
# Options of `docker run` / `podman run` that take no value (`--privileged=false` sets one with "=").
_SWITCH_LONG = frozenset(
    ["detach", "interactive", "tty", "rm", "read-only", "read-only-tmpfs", "privileged", "init", "no-healthcheck", "oom-kill-disable",
     "publish-all", "sig-proxy", "help", "quiet", "disable-content-trust", "use-api-socket", "replace", "rmi", "no-hosts", "http-proxy",
     "env-host", "tls-verify", "passwd", "rootfs", "no-hostname"]
)
_VALUE_SHORT = frozenset("acehlmpuvw")  # attach, cpu-shares, env, hostname, label, memory, publish, user, volume, workdir
_SHORT_NAMES = {"v": "volume", "e": "env", "p": "publish", "w": "workdir", "u": "user", "h": "hostname", "l": "label", "m": "memory", "c": "cpu-shares", "a": "attach"}
# Global options of the engine, before its subcommand, that take a value.
_GLOBAL_VALUE = frozenset({"-H", "--host", "--context", "-c", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey", "--connection", "--url", "--identity", "--root", "--runroot", "--storage-driver", "--cgroup-manager", "--network-cmd-path", "--events-backend", "--module"})


@dataclass(frozen=True)
class Option:
    """One option of the run command: its long name (``volume`` for ``-v``), its value, and the
    indexes in the command line of the flag and of its value (the same index for ``--flag=value``)."""

    name: str
    value: str | None
    index: int
    value_index: int | None


@dataclass(frozen=True)
class DockerRun:
    """A container engine's run command, read."""

    engine: str
    options: tuple[Option, ...]
    image_index: int | None

    def image(self, command: Sequence[str]) -> str | None:
        return command[self.image_index] if self.image_index is not None else None


def parse(command: Sequence[str], unknown_takes_value: bool = False) -> DockerRun | None:
    """``command`` read as ``ENGINE [global options] [container] run [options] IMAGE [ARGS]``, or None when it is not one.

    With ``unknown_takes_value``, a long option neither listed as taking a value nor as a switch takes the next word
    (an engine's newer option, ``--health-max-log-count 5``, is otherwise read as a switch and its value as the image)."""
    if not command:
        return None
    first = _past_launchers(command)
    if first is None:
        return None
    engine = _program(command[first])
    index = first + 1
    while index < len(command) and command[index] not in ("run", "container"):
        if command[index].startswith("-"):
            index += 2 if command[index] in _GLOBAL_VALUE else 1
        elif command[index - 1].startswith("-") and "=" not in command[index - 1] and index - 1 > first:
            index += 1  # the value of a global option not listed above (nerdctl --namespace k8s.io)
        else:
            break
    if index < len(command) and command[index] == "container":
        index += 1
    if index >= len(command) or command[index] != "run":
        return None
    options: list[Option] = []
    index += 1
    while index < len(command):
        word = command[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        if word.startswith("--"):
            name, equals, value = word[2:].partition("=")
            if equals:
                options.append(Option(name, value, index, index))
            elif (name in _VALUE_LONG or (unknown_takes_value and name not in _SWITCH_LONG)) and index + 1 < len(command):
                options.append(Option(name, command[index + 1], index, index + 1))
                index += 1
            else:
                options.append(Option(name, None, index, None))
            index += 1
            continue
        index = _short(command, index, options)
    return DockerRun(engine, tuple(options), index if index < len(command) else None)


def _program(word: str) -> str:
    return re.split(r"[/\\]", word)[-1].lower().removesuffix(".exe")


def _past_launchers(command: Sequence[str]) -> int | None:
    """Where the engine sits in ``command``, past launchers that run it (``sudo -E docker``, ``env A=1 podman``), or None."""
    index = 0
    while index < len(command):
        program = _program(command[index])
        if program in ENGINES:
            return index
        if program not in _LAUNCHERS:
            return None
        index += 1
        while index < len(command) and (command[index].startswith("-") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", command[index])):
            index += 2 if command[index] in ("-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t", "-T") and program in ("sudo", "doas") else 1
    return None


def _short(command: Sequence[str], index: int, options: list[Option]) -> int:
    """Read a group of short flags (``-it``, ``-v SRC:DST``, ``-vSRC:DST``, ``-e=X``); the next index."""
    word = command[index]
    letters = word[1:]
    for position, letter in enumerate(letters):
        name = _SHORT_NAMES.get(letter, letter)
        if letter not in _VALUE_SHORT:
            options.append(Option(name, None, index, None))
            continue
        rest = letters[position + 1 :]
        if rest:
            options.append(Option(name, rest.removeprefix("="), index, index))
            return index + 1
        if index + 1 < len(command):
            options.append(Option(name, command[index + 1], index, index + 1))
            return index + 2
        options.append(Option(name, None, index, None))
    return index + 1


# --- what hands the container a piece of the host ---

_SOCKET = re.compile(r"(^|/)(docker|podman|containerd|crio|cri-dockerd|buildkitd)\.sock$|^/run/(docker|podman|containerd|crio)(/|$)|^/var/run/(docker|podman|containerd|crio)(/|$)")
_HOME = r"(~|\$HOME|\$\{HOME\}|\$\{userHome\}|\$\{env:(HOME|USERPROFILE)\}|%USERPROFILE%|/root|/home/[^/]+|/Users/[^/]+)"
# A variable the client expands (${workspaceFolder}, $PWD, ~) followed by "..": above it, any directory of the host.
_CLIMBS = re.compile(r"^[~$%].*(^|[/\\])\.\.([/\\]|$)")
_CREDENTIALS = re.compile(_HOME + r"/(\.aws|\.ssh|\.kube|\.config/gcloud|\.azure|\.docker|\.gnupg|\.config/gh|\.netrc|\.git-credentials|\.npmrc|\.pypirc)(/|$)")
_WHOLE_HOME = re.compile(r"^" + _HOME + r"/?$|^/home/?$|^/Users/?$")
_SYSTEM = re.compile(r"^/(etc|proc|sys|dev|boot|run|var/run|var/lib/docker|var/lib/containers|var/lib/kubelet)(/|$)|^/$|^[A-Za-z]:\\?$")
_NAMESPACES = {"network": "the host's network", "net": "the host's network", "pid": "the host's processes", "ipc": "the host's IPC", "userns": "the host's user namespace", "uts": "the host's hostname", "cgroupns": "the host's cgroups"}


def host_source(option: Option) -> str | None:
    """The host path a ``-v``/``--volume``/``--mount`` binds into the container, or None."""
    if option.value is None:
        return None
    if option.name == "volume":
        source = _before_colon(option.value) if not re.match(r"^[A-Za-z]:\\", option.value) else option.value[:2] + _before_colon(option.value[2:])
        return source if _looks_like_path(source) else None  # else a named volume
    if option.name == "mount":
        # The engines read the value as one CSV record and its keys and type in any case.
        fields = {key.strip().lower(): value for key, _, value in (part.partition("=") for row in csv.reader([option.value]) for part in row)}
        bound = fields.get("source") or fields.get("src")
        if bound is None or (fields.get("type", "volume").lower() not in ("bind", "glob") and not _looks_like_path(bound)):
            return None
        return bound
    return None


def _before_colon(value: str) -> str:
    """``value`` up to its first ":" outside a ``${...}`` the client fills in (``${env:HOME}/.ssh:/k`` -> ``${env:HOME}/.ssh``)."""
    depth = 0
    for index, char in enumerate(value):
        if value.startswith("${", index):
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == ":" and not depth:
            return value[:index]
    return value


def _looks_like_path(source: str) -> bool:
    return source.startswith(("/", "~", "$", "%", ".")) or re.match(r"^[A-Za-z]:", source) is not None


def why_dangerous(option: Option) -> str | None:
    """Why ``option`` gives the container a way out of its isolation, or None when it does not."""
    name, value = option.name, option.value
    source = host_source(option)
    if source is not None:
        path = posixpath.normpath(source) if source.startswith("/") else source.rstrip("/") or "/"
        path = "/" if path == "//" else path
        shown = source if path in (source, source.rstrip("/")) else f"{path} (written {source})"
        if _SOCKET.search(path):
            return f"it mounts the container engine's socket {shown}: whoever holds it runs any container, as root, with any host path"
        if _CREDENTIALS.search(path):
            return f"it mounts the credential directory {shown} of the host"
        if _WHOLE_HOME.search(path):
            return f"it mounts a whole home directory ({shown}) of the host"
        if _SYSTEM.search(path):
            return f"it mounts the host's {shown}"
        if _CLIMBS.search(path):
            return f"it mounts {shown}: '..' past a path the client fills in may reach any directory of the host, / included"
        return None
    if value is not None and value.lower() in ("false", "0", "no"):
        return None  # --privileged=false
    if name == "privileged":
        return "it turns off every isolation of the container (all capabilities, all devices, no seccomp or AppArmor)"
    if name == "cap-add":
        return "it gives the container kernel powers a container normally lacks"
    if name == "device":
        return "it hands a host device to the container"
    if name in _NAMESPACES and value is not None and (value.lower() == "host" or (name in ("network", "net", "pid", "ipc") and value.lower().startswith("container:"))):
        return f"it shares {_NAMESPACES[name]} with the container"
    if name in _NAMESPACES and value is not None and value.lower().startswith("ns:"):
        return f"it puts the container in the namespace at {value[3:]} (the host's own, for /proc/1/ns/...)"
    if name == "device-cgroup-rule":
        return "it lets the container open host devices by number (with mknod, every disk of the host)"
    if name == "security-opt" and value is not None and re.match(
        r"^(seccomp|apparmor)[=:]unconfined$|^label[=:](disable|type:(spc_t|unconfined_t))$|^systempaths[=:]unconfined$|^unmask[=:]", value
    ):
        return "it turns off a kernel confinement of the container"
    if name == "volumes-from" and value is not None:
        return "it mounts every volume of another container"
    return None


def dangerous(command: Sequence[str]) -> list[tuple[Option, str]]:
    """Every option of a ``docker run`` ``command`` that hands the container a piece of the host, with why."""
    runs = [run for run in (parse(command), parse(command, unknown_takes_value=True)) if run is not None]
    # Both readings of an option this reader does not know: a flag after it is found whichever the engine meant.
    options = {option.index: option for run in reversed(runs) for option in run.options}
    found = [(option, why_dangerous(option)) for _, option in sorted(options.items())]
    return [(option, why) for option, why in found if why is not None]


def flag_text(command: Sequence[str], option: Option) -> str:
    """The option as the command line writes it (``-v /var/run/docker.sock:/var/run/docker.sock``)."""
    if option.value_index is None or option.value_index == option.index:
        return command[option.index]
    return f"{command[option.index]} {command[option.value_index]}"
