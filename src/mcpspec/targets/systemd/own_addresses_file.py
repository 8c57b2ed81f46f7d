"""Writes the host's own addresses where a server's squid reads them: the file behind
its ``acl host_addresses dst "FILE"``, one network a line.

Run by ``ExecStartPre=+/usr/bin/python3 -I -S -c <own_addresses.py and this file> FILE``
as root outside the unit's sandbox (which hides /proc/net), before squid starts, so
each start of squid reads the addresses the host has then. FILE is in the squid's
runtime directory, which its dynamic user owns: the file is made under a fresh name
(O_EXCL, never through a link) and renamed over FILE, so a link left there is replaced,
not followed. Only the standard library; ``own_networks`` comes from the text before this.
"""

import os
import secrets
import sys


def write_own_addresses(path: str, networks: list[str]) -> None:
    directory, name = os.path.split(path)
    if not os.path.isabs(path) or not name:
        raise SystemExit(f"not an absolute file path: {path!r}")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    dir_fd = os.open(directory, flags)
    try:
        temporary = f".{name}.{secrets.token_hex(8)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        try:
            os.write(fd, "".join(f"{network}\n" for network in networks).encode("ascii"))
            os.fchmod(fd, 0o644)
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


if __name__ == "__main__":
    try:
        write_own_addresses(sys.argv[-1], globals()["own_networks"]())  # argv: -c, a name for ps, FILE
    except (OSError, ValueError) as exc:
        raise SystemExit(f"the host's own addresses could not be written for squid: {exc}") from None
