"""Stops the launcher of `mcpspec run` when mcpspec run dies, even by SIGKILL.

The launcher cannot rely on a parent-death signal (it changes its effective uid to check mount
sources, which clears one), and a server that outlives the end of its input would keep the sandbox
running. So `mcpspec run` starts this small process with a pipe as its stdin (only mcpspec run holds
the write end) and a pidfd of the launcher (its number the one argument): when the pipe ends (mcpspec run is gone,
however it ended), the launcher gets SIGTERM (it tears its sandbox down), then SIGKILL after a grace.
A pidfd never names a reused pid; once the launcher has ended, signalling it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys

GRACE = 10.0


def start(launcher_pid: int) -> tuple[subprocess.Popen[bytes], int] | None:
    """Start the watchdog of ``launcher_pid``: the process and the write end mcpspec run keeps open (None
    when the launcher is already gone)."""
    try:
        pidfd = os.pidfd_open(launcher_pid)
    except OSError:
        return None
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpspec.run.watchdog", str(pidfd)], stdin=read_end, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, pass_fds=(pidfd,), start_new_session=True,
        )  # fmt: skip
    except OSError:
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
        os.close(pidfd)
    return process, write_end


def main(pidfd: int) -> None:
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):  # only the end of the pipe ends us
        signal.signal(signum, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    for signum, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, 0.0)):
        try:
            signal.pidfd_send_signal(pidfd, signum)
        except ProcessLookupError:
            return
        ended, _, _ = select.select([pidfd], [], [], wait)
        if ended:
            return


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, OSError):
        main(int(sys.argv[1]))
