"""A service of the container's host (root, the host's namespaces) that a sandbox must
not reach: it answers every connection with a marker, on an abstract unix socket, a
unix socket in /run and a TCP port of 127.0.0.1.

Usage: host_service.py ABSTRACT_NAME PATH PORT
"""

from __future__ import annotations

import os
import selectors
import socket
import sys

MARKER = b"host-service-reached\n"


def main(abstract: str, path: str, port: int) -> None:
    listeners = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), socket.socket(socket.AF_INET, socket.SOCK_STREAM)]
    listeners[0].bind("\0" + abstract)
    if os.path.exists(path):
        os.unlink(path)
    listeners[1].bind(path)
    os.chmod(path, 0o666)
    listeners[2].setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listeners[2].bind(("127.0.0.1", port))
    selector = selectors.DefaultSelector()
    for listener in listeners:
        listener.listen()
        selector.register(listener, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            connection, _ = key.fileobj.accept()  # type: ignore[union-attr]
            with connection:
                connection.sendall(MARKER)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
