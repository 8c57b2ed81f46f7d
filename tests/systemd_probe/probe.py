"""The server the systemd real tests start: it runs each attack it is asked for from
inside its instance and answers with what happened.

One JSON request per line on stdin (the socket connection), one JSON answer per line
on stdout. Debian's python3 only (the test image has no MCP SDK): the attacks, not
the protocol, are under test.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
from typing import Any

_LISTENERS: list[socket.socket] = []


def _failure(exc: OSError) -> dict[str, Any]:
    return {"ok": False, "errno": errno.errorcode.get(exc.errno or 0, str(exc.errno))}


def _run(request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    if op == "whoami":
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            cgroup = handle.read()
        return {"ok": True, "uid": os.getuid(), "pid": os.getpid(), "cgroup": cgroup, "environ": sorted(os.environ)}
    if op == "env":
        return {"ok": True, "value": os.environ.get(request["name"])}
    if op == "read":
        with open(request["path"], "rb") as handle:
            return {"ok": True, "data": handle.read(4096).decode(errors="replace")}
    if op == "write":
        with open(request["path"], "w", encoding="utf-8") as handle:
            handle.write(request.get("data", "x"))
        return {"ok": True}
    if op == "chmod":
        os.chmod(request["path"], int(request["mode"]))
        return {"ok": True}
    if op == "symlink":
        os.symlink(request["target"], request["path"])
        return {"ok": True}
    if op == "mkfifo":
        os.mkfifo(request["path"])
        return {"ok": True}
    if op == "unlink":
        os.unlink(request["path"])
        return {"ok": True}
    if op == "kill":
        os.kill(int(request["pid"]), int(request.get("signal", signal.SIGTERM)))
        return {"ok": True}
    if op == "walk":
        found = []
        for root, dirs, files in os.walk(request["path"]):
            found += [os.path.join(root, name) for name in dirs + files]
        return {"ok": True, "paths": sorted(found)}
    if op == "socket":
        socket.socket(getattr(socket, request["family"]), socket.SOCK_STREAM).close()
        return {"ok": True}
    if op == "connect_unix":
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(request["path"])
        return {"ok": True}
    if op == "connect_abstract":
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect("\0" + request["name"])
            return {"ok": True, "data": sock.recv(256).decode(errors="replace")}
    if op == "run":
        # A program inside the instance (the shared syscall probe): its exit status and output.
        done = subprocess.run(request["argv"], capture_output=True, text=True, timeout=60, check=False)
        return {"ok": True, "status": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-2000:]}
    if op == "netns":
        return {"ok": True, "netns": os.readlink("/proc/self/ns/net")}
    if op == "stderr":
        sys.stderr.write(request["text"])
        sys.stderr.flush()
        return {"ok": True}
    if op == "journal_native":
        # journald's native protocol, with fields of the sender's choice.
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(request["entry"].encode(), request.get("path", "/run/systemd/journal/socket"))
        return {"ok": True}
    if op == "journal_stream":
        # A stdout stream of its own: the header names the identifier.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect("/run/systemd/journal/stdout")
            sock.sendall(f"{request['identifier']}\n\n6\n0\n0\n0\n0\n{request['text']}\n".encode())
        return {"ok": True}
    if op == "syslog":
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(request["text"].encode(), "/dev/log")
        return {"ok": True}
    if op == "connect_tcp":
        with socket.create_connection((request["host"], int(request["port"])), timeout=5):
            return {"ok": True}
    if op == "listen":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", int(request["port"])))
        listener.listen()
        _LISTENERS.append(listener)
        return {"ok": True}
    if op == "dns_udp":
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(2)
            query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
            sock.sendto(query, (request.get("host", "127.0.0.53"), 53))
            sock.recvfrom(512)
        return {"ok": True}
    if op == "proxy":
        # One request through the proxy the unit's environment names; returns the status line.
        proxy = os.environ["HTTP_PROXY"].removeprefix("http://")
        host, port = proxy.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(request["request"].encode())
            answer = sock.recv(4096).decode(errors="replace")
        return {"ok": True, "status": answer.split("\r\n", 1)[0]}
    if op == "proxy_all":
        # Each request (with Connection: close) through the proxy; returns each whole answer (64 KiB at most).
        proxy = os.environ["HTTP_PROXY"].removeprefix("http://")
        host, port = proxy.rsplit(":", 1)
        answers = []
        for text in request["requests"]:
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(text.encode())
                data = b""
                try:
                    while len(data) < 65536 and (chunk := sock.recv(4096)):
                        data += chunk
                except OSError:
                    pass
            answers.append(data.decode(errors="replace"))
        return {"ok": True, "answers": answers}
    if op == "fork":
        children, failures = [], 0
        for _ in range(int(request["count"])):
            try:
                pid = os.fork()
            except OSError:
                failures += 1
                continue
            if pid == 0:
                signal.pause()
                os._exit(0)
            children.append(pid)
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        return {"ok": True, "started": len(children), "refused": failures}
    if op == "allocate":
        block = bytearray(int(request["bytes"]))
        for index in range(0, len(block), 4096):
            block[index] = 1
        return {"ok": True}
    return {"ok": False, "errno": "unknown op"}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    try:
        return _run(request)
    except OSError as exc:
        return _failure(exc)


def main() -> None:
    for line in sys.stdin:
        sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
