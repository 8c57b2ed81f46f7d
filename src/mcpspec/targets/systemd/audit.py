"""The audit line of one stopped instance, appended by the service manager as root.

Run by ``ExecStopPost=+/usr/bin/python3 -I -S -c <this file> ...`` (outside the
sandbox, with an empty environment), from values systemd fills in at stop:

    project server instance result exit_code exit_status sink mounts_json egress_json

``sink`` is ``stderr``/``journal`` or an absolute path. Journal lines are sent to
journald's native socket with ``SYSLOG_IDENTIFIER=mcpspec-audit``, a fixed
``MESSAGE_ID`` and ``MCPSPEC_*`` fields; journald adds ``_UID=0``, which no sandbox
can claim (the server's own output carries its unit's identifier and its transient
uid), so ``journalctl _UID=0 SYSLOG_IDENTIFIER=mcpspec-audit`` holds only these lines.
Without journald the line goes to stderr. A path is opened one component at a time, never following a symbolic link;
the file must be a regular file owned by root with one link, so a link or a file
that a sandbox planted in place of the sink, or of a directory above it, is
refused: the line then goes to the journal with the reason (``MCPSPEC_EVENT=sink-refused``).
Only the standard library: it runs on the host's python3, not in a venv.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import sys
import time

_UNSAFE = re.compile(r"[^A-Za-z0-9._:@-]")
# systemd applies TemporaryFileSystem= (the sandbox's empty /run) to "+" commands too, so
# journald's socket is reached through PID 1's root first; the sandbox itself cannot
# (another uid, and ProtectProc= hides PID 1 from it).
JOURNAL_SOCKETS = ("/proc/1/root/run/systemd/journal/socket", "/run/systemd/journal/socket")
IDENTIFIER = "mcpspec-audit"
MESSAGE_ID = "4b109a9eccf44729a3965719d3306099"  # every audit line of this target


def clean(value: str) -> str:
    return _UNSAFE.sub("_", value)[:128]


def audit_line(argv: list[str], now: float) -> str:
    project, server, instance, result, code, status = (clean(word) for word in argv[:6])
    line = {
        "event": "stop", "project": project, "server": server, "instance": instance,
        "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "result": result, "exit_code": code, "exit_status": status,
        "mounts": json.loads(argv[7]), "egress": json.loads(argv[8]),
    }
    return json.dumps(line, separators=(",", ":"), sort_keys=True)


class Refused(Exception):
    """The sink is not a file root may safely append to."""


def _open_dir(parent: int, name: str) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        os.mkdir(name, 0o750, dir_fd=parent)  # mkdirat: never follows a link either
        return os.open(name, flags, dir_fd=parent)
    except OSError as exc:
        raise Refused(f"{name}: {exc.strerror} (not a directory, or a link)") from None


def append(sink: str, line: str) -> None:
    """Append ``line`` to ``sink`` without following a link anywhere on its path."""
    parts = [part for part in sink.split("/") if part]
    if not sink.startswith("/") or not parts or ".." in parts:
        raise Refused("not an absolute path")
    directory = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            following = _open_dir(directory, part)
            os.close(directory)
            directory = following
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags, 0o640, dir_fd=directory)
        except OSError as exc:
            raise Refused(f"{exc.strerror} (a link, or not a file)") from None
    finally:
        os.close(directory)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("not a regular file")
        if info.st_nlink != 1:
            raise Refused(f"{info.st_nlink} hard links")
        if info.st_uid != 0:
            raise Refused(f"owned by uid {info.st_uid}, not root")
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def journal_entry(message: str, priority: int, fields: dict[str, str]) -> bytes:
    """journald's native protocol: KEY=value lines. No value holds a newline (the message
    is one JSON line or built from cleaned words; the fields are cleaned)."""
    lines = [f"MESSAGE={message.replace(chr(10), ' ')}", f"PRIORITY={priority}", f"SYSLOG_IDENTIFIER={IDENTIFIER}", f"MESSAGE_ID={MESSAGE_ID}"]
    lines += [f"MCPSPEC_{key}={clean(value)}" for key, value in fields.items()]
    return ("\n".join(lines) + "\n").encode()


def emit(message: str, priority: int, fields: dict[str, str], sockets: tuple[str, ...] = JOURNAL_SOCKETS) -> None:
    """To the journal's native socket; to stderr where there is no journald."""
    entry = journal_entry(message, priority, fields)
    reason = "no socket"
    for path in sockets:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as journal:
                journal.sendto(entry, path)
            return
        except OSError as exc:
            reason = exc.strerror or str(exc)
    print(f"mcpspec: journald's socket refused the audit line ({reason}); it goes to stderr", file=sys.stderr)
    print(message, file=sys.stderr)


def main(argv: list[str]) -> int:
    os.umask(0o077)
    line = audit_line(argv, time.time())
    fields = {"PROJECT": argv[0], "SERVER": argv[1], "INSTANCE": argv[2], "EVENT": "stop"}
    sink = argv[6]
    if sink in ("stderr", "journal"):
        emit(line, 6, fields)
        return 0
    try:
        append(sink, line)
    except (Refused, OSError) as exc:
        emit(f"mcpspec: refusing the audit sink {clean(sink)}: {exc}; the line: {line}", 3, {**fields, "EVENT": "sink-refused"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[2:]))  # argv: -c, the label mcpspec-audit, then the values
