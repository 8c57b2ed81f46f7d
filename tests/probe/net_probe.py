"""Attack the host from inside a sandbox: TCP to host addresses, DNS through any resolver in reach.

    python3 net_probe.py attack JSON   prints the results as JSON
    python3 net_probe.py serve PORT    an HTTP server on 127.0.0.1:PORT; POST / with the JSON answers the results

JSON: {"targets": [[host, port], ...], "names": [name, ...], "port": N}. Besides the targets, the
probe tries every gateway in its own route tables (both families) at `port`, and sends a DNS query
for each name to every nameserver of its resolv.conf and every gateway of its own, and resolves
each name through the C library. A test only names addresses of its own machine, and names that
the resolvers in reach answer themselves (never forwarded).
"""

from __future__ import annotations

import http.server
import ipaddress
import json
import socket
import struct
import sys
from typing import Any


def _routes() -> tuple[list[str], list[str]]:
    """The gateways of the IPv4 and IPv6 route tables, and the first host of each on-link IPv4 network
    (where netavark and docker put the host)."""
    gateways: list[str] = []
    interfaces: list[str] = []
    try:
        with open("/proc/net/route", encoding="ascii") as table:
            for line in table.read().splitlines()[1:]:
                fields = line.split()
                interfaces.append(fields[0])
                destination, gateway, mask = (socket.inet_ntoa(struct.pack("<I", int(f, 16))) for f in (fields[1], fields[2], fields[7]))
                if gateway != "0.0.0.0":
                    gateways.append(gateway)
                elif mask != "0.0.0.0":
                    network = ipaddress.ip_network(f"{destination}/{mask}", strict=False)
                    gateways.append(str(next(network.hosts())))
    except OSError:
        pass
    try:
        with open("/proc/net/ipv6_route", encoding="ascii") as table:
            for line in table.read().splitlines():
                fields = line.split()
                if fields[4] != "0" * 32:
                    gateways.append(str(ipaddress.IPv6Address(bytes.fromhex(fields[4]))) + "%" + fields[9])
                interfaces.append(fields[9])
    except OSError:
        pass
    return sorted(set(gateways)), sorted(set(interfaces))


def _nameservers() -> list[str]:
    try:
        with open("/etc/resolv.conf", encoding="utf-8") as conf:
            return [line.split()[1] for line in conf if line.startswith("nameserver") and len(line.split()) > 1]
    except OSError:
        return []


def _connect(host: str, port: int) -> str:
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(info[0], socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(info[4])
        return "connected"
    except OSError as exc:
        return f"{type(exc).__name__}:{exc.errno}"


def _query(server: str, name: str) -> str:
    """One DNS query for ``name`` (A) over UDP; "answered" when any reply comes back."""
    packet = struct.pack(">HHHHHH", 0x6D63, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    try:
        info = socket.getaddrinfo(server, 53, type=socket.SOCK_DGRAM)[0]
        with socket.socket(info[0], socket.SOCK_DGRAM) as sock:
            sock.settimeout(2)
            sock.sendto(packet, info[4])
            sock.recv(512)
        return "answered"
    except OSError as exc:
        return f"{type(exc).__name__}:{exc.errno}"


def _resolve(name: str) -> str:
    try:
        return "resolved:" + ",".join(sorted({str(i[4][0]) for i in socket.getaddrinfo(name, 80)}))
    except OSError as exc:
        return f"{type(exc).__name__}:{exc.errno}"


def attack(request: dict[str, Any]) -> dict[str, Any]:
    gateways, interfaces = _routes()
    port = int(request.get("port", 80))
    targets = [(str(h), int(p)) for h, p in request.get("targets", [])] + [(g, port) for g in gateways]
    names = [str(n) for n in request.get("names", [])]
    servers = _nameservers() + gateways  # never another host's resolver: a query there could be forwarded off the machine
    with open("/proc/net/dev", encoding="ascii") as dev:
        devices = [line.split(":")[0].strip() for line in dev.read().splitlines()[2:]]
    return {
        "devices": devices, "route_interfaces": interfaces, "gateways": gateways, "nameservers": _nameservers(),
        "connect": {f"{h} {p}": _connect(h, p) for h, p in targets},
        "dns": {f"{s} {n}": _query(s, n) for s in dict.fromkeys(servers) for n in names},
        "resolve": {n: _resolve(n) for n in names},
    }


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        body = json.dumps(attack(request)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"net-probe")

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), _Handler).serve_forever()
    else:
        print(json.dumps(attack(json.loads(sys.argv[2]))))
