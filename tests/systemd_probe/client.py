"""Runs in the test container as root: holds connections to the servers' sockets
(each one starts an instance) and relays the test's requests to them.

Lines in: {"open": id, "path": socket} | {"to": id, "request": {...}} |
{"close": id} | {"wait_closed": id, "timeout": s} | {"http": port, "request": {...}}
(one POST to 127.0.0.1:port, an HTTP server's forwarded port). One JSON line out for each.
"""

from __future__ import annotations

import http.client
import json
import socket
import sys
import time
from typing import Any

connections: dict[str, tuple[socket.socket, Any]] = {}


def handle(message: dict[str, Any]) -> dict[str, Any]:
    if "open" in message:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(message["path"])
        sock.settimeout(30)
        connections[message["open"]] = (sock, sock.makefile("rwb"))
        return {"ok": True}
    if "to" in message:
        _, stream = connections[message["to"]]
        stream.write((json.dumps(message["request"]) + "\n").encode())
        stream.flush()
        line = stream.readline()
        return json.loads(line) if line else {"ok": False, "errno": "closed"}
    if "http" in message:
        connection = http.client.HTTPConnection("127.0.0.1", int(message["http"]), timeout=30)
        try:
            connection.request("POST", "/", body=json.dumps(message["request"]), headers={"Content-Type": "application/json"})
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()
    if "wait_closed" in message:
        sock, _ = connections[message["wait_closed"]]
        sock.settimeout(float(message["timeout"]))
        start = time.monotonic()
        try:
            while sock.recv(4096):
                pass
        except TimeoutError:
            return {"ok": False, "errno": "still open"}
        return {"ok": True, "after": time.monotonic() - start}
    if "close" in message:
        sock, stream = connections.pop(message["close"])
        stream.close()
        sock.close()
        return {"ok": True}
    return {"ok": False, "errno": "unknown message"}


for line in sys.stdin:
    try:
        answer = handle(json.loads(line))
    except OSError as exc:
        answer = {"ok": False, "errno": type(exc).__name__ + ": " + str(exc)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
