"""Two network namespaces made for a test, for squid and the bwrap launcher to be attacked in.

``host`` plays the machine the proxy runs on: loopback and a veth link that also holds
the host's own "public" addresses (HOST_V4, HOST_V6), with a listener on [::]:PORT
that answers on all of them (the host's own service). ``far`` plays the internet: the
other end of the link (FAR_V4, FAR_V6), with a listener of its own. Public space next to the
refused ranges is used (documentation ranges are refused like private ones); no packet
leaves the two namespaces.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import require_tool

PORT = 8080
PROXY = 3128
HOST_V4, HOST_V6 = "100.128.1.9", "2001:200:1::9"
LINK_V4, LINK_V6 = "100.128.0.1", "2001:200::1"
FAR_V4, FAR_V6 = "100.128.0.7", "2001:200::7"
ANYIP_V4, ANYIP_V6 = "100.128.2", "2001:200:2::"  # a /24 and a /64 routed as local
HOSTS = {"far.test": FAR_V4, "far6.test": FAR_V6, "own.test": HOST_V4, "own6.test": HOST_V6}
SRC = str(Path(__file__).resolve().parent.parent / "src")

# Answers every GET with its own name, so a test sees which listener a request reached.
LISTENER = textwrap.dedent(
    """
    import http.server, socket, sys
    body = sys.argv[1].encode()
    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6
        def server_bind(self):
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        def log_message(self, *args): pass
    Server(("::", int(sys.argv[2])), Handler).serve_forever()
    """
)

# Run inside ``host``: each request (raw bytes, JSON-escaped) is sent to the proxy; prints each answer's first 4 KiB.
CLIENT = textwrap.dedent(
    f"""
    import json, socket, sys
    out = []
    for request in json.load(sys.stdin):
        with socket.create_connection(("127.0.0.1", {PROXY}), 5) as s:
            s.sendall(request.encode("latin-1"))
            s.settimeout(5)
            data = b""
            try:  # a tunnel stays open: after CONNECT, only its answer's head is read
                while len(data) < 4096 and (chunk := s.recv(4096)):
                    data += chunk
                    if request.startswith("CONNECT") and b"\\r\\n\\r\\n" in data:
                        break
            except OSError:
                pass
        out.append(data.decode("latin-1"))
    print(json.dumps(out))
    """
)


# Run by a sandboxed server: each request of argv[1] sent raw to the proxy its HTTP_PROXY names;
# prints [status, which of the strings of argv[2] the answer's body holds] of each.
PROXY_CLIENT = """
import json, os, socket, sys
host, port = os.environ["HTTP_PROXY"].removeprefix("http://").rsplit(":", 1)
out = []
for request in json.loads(sys.argv[1]):
    with socket.create_connection((host, int(port)), 5) as s:
        s.sendall(request.encode("latin-1"))
        s.settimeout(5)
        data = b""
        try:
            while len(data) < 65536 and (chunk := s.recv(4096)):
                data += chunk
        except OSError:
            pass
    head, _, body = data.decode("latin-1").partition("\\r\\n\\r\\n")
    out.append([int(head.split()[1]) if head.startswith("HTTP/") else 0, [m for m in json.loads(sys.argv[2]) if m in body]])
print(json.dumps(out))
"""


def own_networks_in(python: list[str]) -> list[str]:
    """What the launcher's reader finds where ``python`` runs (in a namespace: ``ip netns exec NS python``), from this source tree."""
    code = "from mcpspec.targets.own_addresses import own_networks; print(chr(10).join(own_networks()))"
    done = subprocess.run([*python, "-I", "-c", f"import sys; sys.path.insert(0, {SRC!r}); {code}"], capture_output=True, text=True, check=True)
    return done.stdout.split()


@contextmanager
def squid_running(inside: list[str], squid: str, conf: Path) -> Iterator[None]:
    """squid with ``conf``, run by ``inside`` (``ip netns exec NS``), accepting on 127.0.0.1:PROXY until the block ends."""
    proxy = subprocess.Popen([*inside, squid, "-N", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        probe = f"import socket; socket.create_connection(('127.0.0.1', {PROXY}), 1)"
        while subprocess.run([*inside, sys.executable, "-c", probe], capture_output=True).returncode:
            assert proxy.poll() is None, f"squid exited: {proxy.stderr.read().decode() if proxy.stderr else ''}"
            assert time.monotonic() < deadline, "squid did not start"
            time.sleep(0.1)
        yield
    finally:
        proxy.terminate()
        try:
            proxy.wait(10)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()


def status(answer: str) -> int:
    return int(answer.split()[1]) if answer.startswith("HTTP/") else 0


class Lab:
    def __init__(self, ip: str, squid: str, base: Path) -> None:
        self.ip, self.squid, self.base = ip, squid, base
        self.host = f"mcpspec-host-{os.getpid()}"
        self.far = f"mcpspec-far-{os.getpid()}"
        self.processes: list[subprocess.Popen[bytes]] = []

    def inside(self, namespace: str | None = None) -> list[str]:
        return [self.ip, "netns", "exec", namespace or self.host]

    def enter(self) -> list[str]:
        """A command prefix that runs in ``host``'s network namespace and nothing else: ``ip netns exec``
        also mounts a sysfs of its own, without the cgroup hierarchies a bwrap launcher makes its cgroup in."""
        return [require_tool("nsenter"), f"--net=/run/netns/{self.host}"]

    def setup(self) -> None:
        run = lambda *argv: subprocess.run(list(argv), check=True)  # noqa: E731
        run(self.ip, "netns", "add", self.host)
        run(self.ip, "netns", "add", self.far)
        host, far = self.inside(), self.inside(self.far)
        for side in (host, far):
            run(*side, self.ip, "link", "set", "lo", "up")
        run(*host, self.ip, "link", "add", "mcpl0", "type", "veth", "peer", "name", "mcpl1")
        run(*host, self.ip, "link", "set", "mcpl1", "netns", self.far)
        run(*host, self.ip, "addr", "add", f"{LINK_V4}/24", "dev", "mcpl0")
        run(*host, self.ip, "addr", "add", f"{LINK_V6}/64", "dev", "mcpl0", "nodad")
        run(*host, self.ip, "link", "set", "mcpl0", "up")
        run(*far, self.ip, "addr", "add", f"{FAR_V4}/24", "dev", "mcpl1")
        run(*far, self.ip, "addr", "add", f"{FAR_V6}/64", "dev", "mcpl1", "nodad")
        run(*far, self.ip, "link", "set", "mcpl1", "up")
        # The host's public addresses, on its link as on a real machine's network card.
        run(*host, self.ip, "addr", "add", f"{HOST_V4}/32", "dev", "mcpl0")
        run(*host, self.ip, "addr", "add", f"{HOST_V6}/128", "dev", "mcpl0", "nodad")
        # Whole ranges the host answers on (AnyIP local routes), of each family.
        run(*host, self.ip, "route", "add", "local", f"{ANYIP_V4}.0/24", "dev", "lo")
        run(*host, self.ip, "-6", "route", "add", "local", f"{ANYIP_V6}/64", "dev", "lo")
        hosts = self.base / "hosts"
        hosts.write_text("".join(f"{address} {name}\n" for name, address in HOSTS.items()), encoding="utf-8")
        hosts.chmod(0o644)
        self.processes.append(subprocess.Popen([*host, sys.executable, "-c", LISTENER, "host-service", str(PORT)]))
        self.processes.append(subprocess.Popen([*far, sys.executable, "-c", LISTENER, "far-service", str(PORT)]))
        for address in (HOST_V4, FAR_V4, FAR_V6):
            self.wait_connect(address, PORT)

    def wait_connect(self, address: str, port: int) -> None:
        deadline = time.monotonic() + 10
        probe = f"import socket; socket.create_connection(({address!r}, {port}), 1)"
        while subprocess.run([*self.inside(), sys.executable, "-c", probe], capture_output=True).returncode:
            assert time.monotonic() < deadline, f"nothing listens on {address}:{port}"
            time.sleep(0.1)

    def own_networks(self) -> list[str]:
        return own_networks_in([*self.inside(), sys.executable])

    def squid_conf(self, rules: str, host_networks: list[str]) -> str:
        """A generated squid.conf's rules with the lines the bwrap launcher adds (``host_networks``: its host ACL)."""
        runtime = [f"http_port 127.0.0.1:{PROXY}", f"pid_filename {self.base}/squid.pid", f"cache_log {self.base}/cache.log",
                   f"hosts_file {self.base}/hosts", f"coredump_dir {self.base}", *(f"acl host_addresses dst {n}" for n in host_networks),
                   f"acl proxy_port port {PROXY}"]
        return "\n".join(runtime) + "\n" + rules + f"access_log stdio:{self.base}/access.log mcpspec\n"

    def answers(self, conf: str, requests: list[str]) -> list[str]:
        """Start squid with ``conf`` in ``host``, send each raw request, return each raw answer."""
        path = self.base / "squid.conf"
        path.write_text(conf, encoding="utf-8")
        (self.base / "access.log").unlink(missing_ok=True)
        with squid_running(self.inside(), self.squid, path):
            done = subprocess.run([*self.inside(), sys.executable, "-c", CLIENT], input=json.dumps(requests), capture_output=True, text=True, timeout=120, check=True)
        result: list[str] = json.loads(done.stdout)
        return result

    def access_log(self) -> list[str]:
        path = self.base / "access.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()
        for namespace in (self.host, self.far):
            subprocess.run([self.ip, "netns", "del", namespace], check=False)
        shutil.rmtree(self.base, ignore_errors=True)


def make_lab() -> Lab:
    ip, squid = require_tool("ip"), require_tool("squid")
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("creating network namespaces needs root (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("creating network namespaces needs root")
    base = Path(tempfile.mkdtemp(prefix="mcpspec-lab-"))
    base.chmod(0o755)
    proxy_user = pwd.getpwnam("proxy")
    os.chown(base, proxy_user.pw_uid, proxy_user.pw_gid)
    lab = Lab(ip, squid, base)
    try:
        lab.setup()
    except BaseException:
        lab.close()
        raise
    return lab
