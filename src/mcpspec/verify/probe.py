"""The probe `mcpspec verify` starts in place of a server, inside that server's sandbox.

It runs on the sandbox's own ``/usr/bin/python3`` (standard library only, Python 3.10 or newer),
reads one JSON object of checks on stdin (paths, variable names, destinations, limits and SHA-256
digests of the secrets: never a secret's value), observes, and prints one JSON report on stdout.
It judges nothing: `mcpspec verify` compares the report with the spec. Nothing it prints is a
secret or a digest of one: a secret found somewhere is reported by where it was found.

Network safety: a direct connection to an address outside 127.0.0.0/8 and ::1 is attempted only
when the sandbox's network namespace has no interface but ``lo`` (then the kernel has no route and
no packet leaves the namespace); otherwise the report says the connection was not attempted.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import ipaddress
import json
import mmap
import os
import resource
import secrets
import select
import socket
import stat
import sys
import time
from typing import Any

MIB = 1 << 20
SCAN_LIMIT = 20000  # directory entries the secret search looks at
SCAN_SKIP = ("/proc", "/sys", "/usr", "/dev")
CONNECT_SECONDS = 5.0
CHILD_SECONDS = 20.0


def error_name(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return errno.errorcode.get(exc.errno, type(exc).__name__)
    return type(exc).__name__


def identity() -> dict[str, Any]:
    status: dict[str, str] = {}
    with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    wanted = ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")
    return {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "status": {key: status.get(key, "") for key in wanted}}


def look(path: str) -> dict[str, Any]:
    """Whether ``path`` exists in here, and what a directory holds (names only, at most 20)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"path": path, "state": "absent"}
    except OSError as exc:
        return {"path": path, "state": "present", "error": error_name(exc)}
    if not stat.S_ISDIR(st.st_mode):
        return {"path": path, "state": "present", "kind": "file"}
    try:
        entries = sorted(os.listdir(path))
    except OSError as exc:
        return {"path": path, "state": "present", "kind": "dir", "error": error_name(exc)}
    return {"path": path, "state": "present", "kind": "dir", "entries": entries[:20], "count": len(entries)}


def try_write(target: str) -> dict[str, Any]:
    """Whether this uid can write in directory ``target`` (a file created and removed) or to file ``target``
    (opened for appending, nothing written)."""
    try:
        st = os.stat(target)
    except OSError as exc:
        return {"target": target, "exists": False, "error": error_name(exc)}
    try:
        if stat.S_ISDIR(st.st_mode):
            name = os.path.join(target, f".mcpspec-verify-{secrets.token_hex(6)}")
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            os.unlink(name)
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW))
    except OSError as exc:
        return {"target": target, "exists": True, "writable": False, "error": error_name(exc)}
    return {"target": target, "exists": True, "writable": True}


def environment_names() -> list[str]:
    """The names the sandbox was started with (/proc/self/environ: before Python's own locale coercion)."""
    with open("/proc/self/environ", "rb") as handle:
        block = handle.read()
    return sorted({item.split(b"=", 1)[0].decode("utf-8", "replace") for item in block.split(b"\0") if item})


class SecretSearch:
    """Finds where the secrets are, by SHA-256 of candidate values; returns places, never values."""

    def __init__(self, wanted: list[dict[str, Any]]) -> None:
        self.wanted = wanted
        self.sizes = {item["length"] for item in wanted} | {item["length"] + 1 for item in wanted}
        self.found: dict[str, list[str]] = {item["name"]: [] for item in wanted}
        self.searched = 0

    def match(self, data: bytes, place: str) -> None:
        digests = {hashlib.sha256(data).hexdigest(), hashlib.sha256(data.rstrip(b"\n")).hexdigest()}
        for item in self.wanted:
            if item["sha256"] in digests:
                self.found[item["name"]].append(place)

    def environment(self) -> None:
        with open("/proc/self/environ", "rb") as handle:
            for entry in handle.read().split(b"\0"):
                name, _, value = entry.partition(b"=")
                if name:
                    self.match(value, f"env {name.decode('utf-8', 'replace')}")

    def files(self) -> None:
        todo = ["/"]
        while todo and self.searched < SCAN_LIMIT:
            directory = todo.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                self.searched += 1
                path = entry.path
                if path in SCAN_SKIP and path != "/dev":
                    continue
                if path == "/dev":
                    todo.append("/dev/shm")
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(path)
                    elif entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_size in self.sizes:
                        with open(path, "rb") as handle:
                            self.match(handle.read(max(self.sizes)), f"file {path}")
                except OSError:
                    continue

    def command_lines(self) -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    line = handle.read(1 << 16)
            except OSError:
                continue
            for item in self.wanted:
                if self.contains(line, item):
                    self.found[item["name"]].append(f"command line of pid {pid}")

    @staticmethod
    def contains(line: bytes, item: dict[str, Any]) -> bool:
        length = item["length"]
        if length == 0 or length > len(line):
            return False
        if (len(line) - length + 1) * length > 50_000_000:  # too long to slide over: whole arguments only
            return any(hashlib.sha256(part).hexdigest() == item["sha256"] for part in line.split(b"\0"))
        return any(hashlib.sha256(line[start:start + length]).hexdigest() == item["sha256"] for start in range(len(line) - length + 1))


def interfaces() -> list[str]:
    with open("/proc/net/dev", encoding="ascii", errors="replace") as handle:
        return sorted(line.split(":", 1)[0].strip() for line in handle.readlines()[2:] if ":" in line)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def connect(host: str, port: int, isolated: bool) -> dict[str, Any]:
    """A direct TCP connection, bypassing any proxy."""
    if not isolated and not is_loopback(host):
        return {"connected": False, "skipped": "the sandbox has a network interface besides lo: a connection could leave the host"}
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:  # the socket too: the syscall filter refuses inet sockets to a server without egress
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_SECONDS)
            sock.connect((host, port))
    except OSError as exc:
        return {"connected": False, "error": error_name(exc)}
    return {"connected": True}


def through_proxy(proxy_port: int, host: str, port: int) -> dict[str, Any]:
    """CONNECT host:port through the proxy inside the sandbox: its status and squid's error name."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        with socket.create_connection(("127.0.0.1", proxy_port), CONNECT_SECONDS) as sock:
            sock.settimeout(CONNECT_SECONDS * 3)
            sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode("ascii"))
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                head += chunk
    except OSError as exc:
        return {"status": None, "error": error_name(exc)}
    lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    words = lines[0].split()
    status = int(words[1]) if len(words) > 1 and words[1].isdigit() else None
    squid_error = next((line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("x-squid-error:")), None)
    return {"status": status, "squid_error": squid_error.split()[0] if squid_error else None}


def proxy_port() -> int | None:
    value = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy") or ""
    prefix = "http://127.0.0.1:"
    if value.startswith(prefix) and value[len(prefix):].rstrip("/").isdigit():
        return int(value[len(prefix):].rstrip("/"))
    return None


def in_child(work: Any) -> dict[str, Any]:
    """Run ``work`` in a forked child (which may fail or be killed) and return what it reported."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            result = work()
        except BaseException as exc:  # noqa: BLE001 - whatever happens is the observation
            result = {"error": error_name(exc)}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    deadline = time.monotonic() + CHILD_SECONDS
    while time.monotonic() < deadline:
        ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    with contextlib.suppress(OSError):
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"error": f"the child ended without a report (status {status})"}
    return dict(json.loads(data))


def fork_until_refused(limit: int) -> dict[str, Any]:
    """Fork children that wait on a pipe until a fork fails or ``limit`` + 5 started; then end them all."""
    hold_r, hold_w = os.pipe()
    started = 0
    error = None
    children = []
    try:
        while started < limit + 5:
            try:
                pid = os.fork()
            except OSError as exc:
                error = error_name(exc)
                break
            if pid == 0:
                os.close(hold_w)
                os.read(hold_r, 1)
                os._exit(0)
            children.append(pid)
            started += 1
    finally:
        os.close(hold_w)
        os.close(hold_r)
        for pid in children:
            os.waitpid(pid, 0)
    soft, _hard = resource.getrlimit(resource.RLIMIT_NPROC)
    return {"started": started, "error": error, "rlimit": soft}


def reserve_memory(limit: int) -> dict[str, Any]:
    """Map anonymous memory in 64 MiB pieces up to ``limit`` + 64 MiB, touching none of it (no page
    becomes resident, so the host is never at risk): the address-space limit stops it, or it does not."""
    chunk = 64 * MIB
    maps = []
    reserved = 0
    error = None
    try:
        while reserved < limit + chunk:
            try:
                maps.append(mmap.mmap(-1, chunk, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
            except (OSError, MemoryError) as exc:
                error = error_name(exc)
                break
            reserved += chunk
    finally:
        for item in maps:
            item.close()
    return {"reserved_mib": reserved // MIB, "error": error}


def main() -> None:
    checks = json.loads(sys.stdin.buffer.read() or b"{}")
    report: dict[str, Any] = {"identity": identity(), "environment": environment_names()}
    report["hidden"] = [look(path) for path in checks.get("hidden", [])]
    report["mounts"] = [try_write(target) for target in checks.get("writes", [])]
    search = SecretSearch(checks.get("secrets", []))
    if search.wanted:
        search.environment()
        search.files()
        search.command_lines()
    report["secrets"] = {"found": search.found, "searched": search.searched}
    report["interfaces"] = interfaces()
    isolated = report["interfaces"] == ["lo"]
    report["direct"] = [{**item, **connect(item["host"], item["port"], isolated)} for item in checks.get("direct", [])]
    port = proxy_port()
    report["proxy_port"] = port
    report["proxied"] = [{**item, **(through_proxy(port, item["host"], item["port"]) if port else {"status": None, "error": "no proxy variable"})}
                         for item in checks.get("proxied", [])]
    if checks.get("pids"):
        report["pids"] = in_child(lambda: fork_until_refused(int(checks["pids"])))
    if checks.get("memory"):
        report["memory"] = in_child(lambda: reserve_memory(int(checks["memory"])))
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    if checks.get("outlive"):  # the launcher's max_lifetime must end this
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
