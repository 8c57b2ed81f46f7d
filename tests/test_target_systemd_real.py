"""The systemd target's units, started for real by systemd as PID 1 in a podman container,
and attacked from inside the running instances.

The image is a Debian rootfs built by mmdebstrap and imported once; it is kept in
podman's store under a tag derived from what it holds, so later runs reuse it. The
container runs with `--network none`: every address below is its own loopback.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import require_tool
from mcpspec import api
from mcpspec.targets.build import build_plan
from podman_images import Recipe, podman_env
from podman_images import image as built_image

IMAGE = Recipe("mcpspec-systemd-test", ("python3", "systemd", "systemd-sysv", "dbus", "squid", "socat", "systemd-resolved"))
PROBE_DIR = Path(__file__).parent / "systemd_probe"
PROBE_SCRIPTS = ("client.py", "host_service.py", "http_probe.py", "probe.py")
SYSCALL_PROBE = Path(__file__).parent / "probe" / "syscall_probe.py"  # the probe every target's tests run
TOKEN = "file-secret-5c1d8e"
GH_TOKEN = "ghp-env-secret-0b7a43f1"
VICTIM = "root only\n"

SPEC = """\
version: 1
project: sdreal
defaults:
  logging: {audit: true, sink: /var/log/sdreal/audit.jsonl}
workspace:
  root: /srv/sdreal/ws
  dirs:
    output: {mode: rw}
secrets:
  token: {provider: file, ref: /etc/sdreal/token}
  gh: {provider: file, ref: /etc/sdreal/gh-token}
servers:
  probe:
    command: [/usr/bin/python3, /probe/probe.py]
    mounts:
      - {from: workspace.output, to: /workspace/output}
      - {from: /opt/sdreal, to: /probe}
    secrets:
      - {use: token, as: {file: /run/secrets/token}}
      - {use: gh, as: {env: GITHUB_TOKEN}}
  neighbour:
    command: [/usr/bin/python3, /probe/probe.py]
    mounts:
      - {from: /opt/sdreal, to: /probe}
      - {from: /var/log/sdreal, to: /logs, mode: rw}
    logging: {audit: false}
  fetch:
    command: [/usr/bin/python3, /probe/probe.py]
    mounts:
      - {from: /opt/sdreal, to: /probe}
    egress: {allow: ["allowed.test:80"]}
  open:
    command: [/usr/bin/python3, /probe/probe.py]
    mounts:
      - {from: /opt/sdreal, to: /probe}
    egress: {default: allow, deny: ["@private", "@metadata"]}
    logging: {audit: false}
  limits:
    command: [/usr/bin/python3, /probe/probe.py]
    mounts:
      - {from: /opt/sdreal, to: /probe}
    runtime: {pids: 12, memory: 64Mi}
    lifecycle: {max_lifetime: 4s}
    logging: {audit: false}
  web:
    transport: {type: http, port: 8941}
    command: [/usr/bin/python3, /probe/http_probe.py, "8941"]
    mounts:
      - {from: /opt/sdreal, to: /probe}
    logging: {sink: journal}
  weblisten:
    transport: {type: http, port: 8942}
    command: [/usr/bin/python3, /probe/http_probe.py, "8942"]
    mounts:
      - {from: /opt/sdreal, to: /probe}
    process: {listeners: true}
    logging: {sink: journal}
  webfetch:
    transport: {type: http, port: 8944}
    command: [/usr/bin/python3, /probe/http_probe.py, "8944"]
    mounts:
      - {from: /opt/sdreal, to: /probe}
    egress: {allow: ["allowed.test:80"]}
    logging: {audit: false}
"""
# The container host's own services (tests/systemd_probe/host_service.py).
HOST_ABSTRACT = "mcpspec-host-abstract"
HOST_PATH = "/run/mcpspec-host.sock"
HOST_PORT = 7411


class Container:
    """A running systemd container; every podman call goes through `CONTAINERS_CONF`."""

    def __init__(self, podman: str, name: str) -> None:
        self.podman = podman
        self.name = name

    def run(self, *command: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([self.podman, "exec", self.name, *command], capture_output=True, text=True, timeout=timeout, env=podman_env(), check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(command)}: exit {result.returncode}\n{result.stdout}{result.stderr}")
        return result

    def sh(self, script: str, check: bool = True) -> str:
        return self.run("/bin/bash", "-c", script, check=check).stdout

    def put(self, source: Path, target: str) -> None:
        subprocess.run([self.podman, "cp", str(source), f"{self.name}:{target}"], check=True, timeout=60, env=podman_env(), capture_output=True)


class Client:
    """The relay in the container: each `open` is one connection, so one instance."""

    def __init__(self, container: Container) -> None:
        self.process = subprocess.Popen(
            [container.podman, "exec", "-i", container.name, "/usr/bin/python3", "-u", "/opt/sdreal/client.py"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=podman_env(),
        )

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the relay in the container died"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def open(self, key: str, server: str) -> None:
        assert self.send({"open": key, "path": f"/run/mcp-sdreal/{server}.sock"})["ok"]

    def ask(self, key: str, op: str, **arguments: Any) -> dict[str, Any]:
        return self.send({"to": key, "request": {"op": op, **arguments}})

    def http(self, server_port: int, op: str, **arguments: Any) -> dict[str, Any]:
        """One request to an HTTP server, sent to its port on the container host's loopback."""
        return self.send({"http": server_port, "request": {"op": op, **arguments}})

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    podman = require_tool("podman")
    require_tool("runc")
    image = built_image(IMAGE)
    name = f"mcpspec-sd-{uuid.uuid4().hex[:10]}"
    started = subprocess.run(
        # --cgroupns=private: systemd then sees its own cgroup tree and enforces TasksMax= and MemoryMax=.
        [podman, "run", "-d", "--privileged", "--systemd=always", "--cgroupns=private", "--network", "none", "--name", name, image, "/sbin/init"],
        capture_output=True, text=True, timeout=120, env=podman_env(), check=False,
    )
    box = Container(podman, name)
    try:
        assert started.returncode == 0, started.stderr
        _boot(box)
        _install(box)
        yield box
    finally:
        subprocess.run([podman, "rm", "-f", "-t", "0", name], capture_output=True, timeout=120, env=podman_env(), check=False)


def _boot(box: Container) -> None:
    deadline = time.monotonic() + 60
    state = ""
    while time.monotonic() < deadline:
        state = box.run("systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(0.5)
    assert state in ("running", "degraded"), f"systemd in the container: {state}"
    # A host's systemd makes / a shared mount at boot; in a container it does not, and
    # then the credentials it mounts for a unit never reach the unit (an empty,
    # root-only $CREDENTIALS_DIRECTORY: "Permission denied"). Do what the host does.
    box.run("mount", "--make-rshared", "/")
    # The image's own squid is not needed (and takes 30 s to stop gracefully).
    box.run("systemctl", "disable", "squid.service")
    box.run("systemctl", "kill", "--signal=SIGKILL", "squid.service", check=False)


def _install(box: Container) -> None:
    with tempfile.TemporaryDirectory(prefix="mcpspec-sd-units-") as work:
        directory = Path(work)
        spec = directory / "mcp-sandbox.yaml"
        spec.write_text(SPEC, encoding="utf-8")
        build = build_plan(api.load(spec, "mcp-sandbox.yaml"), "systemd")
        blocking = [r.message for r in build.active if r.code in ("TG001", "TG004")]
        assert not blocking, blocking
        units = directory / "units"
        units.mkdir()
        for name, text in build.files.items():
            if name.endswith((".service", ".socket")):
                (units / name).write_text(text, encoding="utf-8")
        # The same probe unit without User=: every instance shares one transient user.
        # It shows the attacks below succeed where the per-instance user is missing.
        shared = re.sub(r"^User=.*\n", "", build.files["mcp-sdreal_probe@.service"], flags=re.M)
        (units / "mcp-sdreal_oneuser@.service").write_text(shared.replace("mcp-sdreal/probe/", "mcp-sdreal/oneuser/"), encoding="utf-8")
        socket_unit = build.files["mcp-sdreal_probe.socket"].replace("/probe.sock", "/oneuser.sock")
        (units / "mcp-sdreal_oneuser.socket").write_text(socket_unit, encoding="utf-8")
        # The same probe unit with the filter the target wrote before the project's policy.
        old = re.sub(r"^SystemCallFilter=.*\n", "", build.files["mcp-sdreal_probe@.service"], flags=re.M)
        old = old.replace("[Service]\n", "[Service]\nSystemCallFilter=@system-service\nSystemCallFilter=~@privileged @resources\n")
        (units / "mcp-sdreal_oldfilter@.service").write_text(old.replace("mcp-sdreal/probe/", "mcp-sdreal/oldfilter/"), encoding="utf-8")
        (units / "mcp-sdreal_oldfilter.socket").write_text(socket_unit.replace("/oneuser.sock", "/oldfilter.sock"), encoding="utf-8")
        box.run("mkdir", "-p", "/etc/mcpspec/sdreal", "/opt/sdreal", "/etc/sdreal", "/var/log/sdreal")
        for unit in sorted(units.iterdir()):
            box.put(unit, f"/etc/systemd/system/{unit.name}")
        for name, text in build.files.items():
            if name.endswith(".squid.conf"):
                (directory / name).write_text(text, encoding="utf-8")
                box.put(directory / name, f"/etc/mcpspec/sdreal/{name}")
        for script in PROBE_SCRIPTS:
            box.put(PROBE_DIR / script, f"/opt/sdreal/{script}")
        box.put(SYSCALL_PROBE, "/opt/sdreal/syscall_probe.py")
    box.sh(
        f"umask 077; printf '%s\\n' {TOKEN} > /etc/sdreal/token; printf '%s\\n' {GH_TOKEN} > /etc/sdreal/gh-token; "
        f"printf '{VICTIM}' > /etc/sdreal/victim; chmod 0755 /opt/sdreal; chmod 0777 /var/log/sdreal; chmod 0644 /opt/sdreal/*.py; "
        "echo '127.0.0.1 allowed.test denied.test' >> /etc/hosts; "
        "systemctl daemon-reload && systemctl start "
        "mcp-sdreal_probe.socket mcp-sdreal_oneuser.socket mcp-sdreal_oldfilter.socket mcp-sdreal_neighbour.socket mcp-sdreal_fetch.socket mcp-sdreal_open.socket mcp-sdreal_limits.socket"
    )


@pytest.fixture
def client(container: Container) -> Iterator[Client]:
    relay = Client(container)
    yield relay
    relay.close()


def _instance(answer: dict[str, Any]) -> str:
    found = re.search(r"@([^/\n]+)\.service", answer["cgroup"])
    assert found, answer["cgroup"]
    return found.group(1)


def test_concurrent_instances_have_their_own_user_and_cannot_reach_each_other(container: Container, client: Client) -> None:
    client.open("a", "probe")
    client.open("b", "probe")
    a, b = client.ask("a", "whoami"), client.ask("b", "whoami")
    assert a["ok"] and b["ok"] and a["uid"] != b["uid"] and 0 not in (a["uid"], b["uid"])
    assert client.ask("b", "write", path="/workspace/output/notes.txt", data="b's work")["ok"]
    b_dir = f"/run/mcp-sdreal/probe/{_instance(b)}/output"
    assert container.sh(f"stat -c '%u %a' {b_dir}").split() == [str(b["uid"]), "700"]
    # a attacks b: its workspace by its host path, its environment, a signal.
    assert client.ask("a", "read", path=f"{b_dir}/notes.txt")["errno"] in ("ENOENT", "EACCES")
    assert client.ask("a", "read", path=f"/proc/{b['pid']}/environ")["errno"] in ("ENOENT", "EACCES", "ESRCH")
    assert client.ask("a", "kill", pid=b["pid"], signal=0)["errno"] == "EPERM"
    assert client.ask("a", "kill", pid=b["pid"], signal=9)["errno"] == "EPERM"
    assert client.ask("b", "whoami")["ok"]  # b still runs
    # The control: without User= both instances share a user, and the same attacks succeed.
    client.open("c", "oneuser")
    client.open("d", "oneuser")
    c, d = client.ask("c", "whoami"), client.ask("d", "whoami")
    assert c["uid"] == d["uid"]
    assert client.ask("c", "kill", pid=d["pid"], signal=0)["ok"]
    assert client.ask("c", "kill", pid=d["pid"], signal=9)["ok"]
    assert not client.ask("d", "whoami")["ok"]  # the connection died with d


def test_dev_shm_is_private_to_each_instance(container: Container, client: Client) -> None:
    """Red team: PrivateDevices= binds the host's /dev/shm into every instance, so a server
    without egress could hand its secrets to one with egress through it."""
    container.sh("echo host-shm-data > /dev/shm/host-file; chmod 644 /dev/shm/host-file")
    client.open("shm-a", "probe")
    client.open("shm-n", "neighbour")
    assert client.ask("shm-a", "write", path="/dev/shm/drop", data="handed over")["ok"]
    assert client.ask("shm-a", "chmod", path="/dev/shm/drop", mode=0o644)["ok"]
    assert client.ask("shm-a", "read", path="/dev/shm/drop")["ok"]
    assert client.ask("shm-n", "read", path="/dev/shm/drop")["errno"] == "ENOENT"
    assert client.ask("shm-a", "read", path="/dev/shm/host-file")["errno"] == "ENOENT"


def test_no_unix_socket_of_the_host_is_reachable_with_egress_denied(container: Container, client: Client) -> None:
    # They exist and answer in the container...
    reachable = "import socket,sys\nfor p in sys.argv[1:]:\n s=socket.socket(socket.AF_UNIX); s.connect(p); s.close()\n"
    sockets = ["/run/dbus/system_bus_socket", "/run/systemd/resolve/io.systemd.Resolve", "/run/systemd/journal/stdout", "/run/systemd/private"]
    container.run("/usr/bin/python3", "-c", reachable, *sockets)
    client.open("p", "probe")
    # ...but not from the instance: no socket at all, and an empty /run.
    for family in ("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"):
        assert client.ask("p", "socket", family=family)["errno"] == "EAFNOSUPPORT", family
    for path in (*sockets, "/var/run/dbus/system_bus_socket", "/dev/log"):
        assert client.ask("p", "connect_unix", path=path)["errno"] == "EAFNOSUPPORT", path
        assert client.ask("p", "read", path=path)["errno"] == "ENOENT", path
    seen = client.ask("p", "walk", path="/run")["paths"]
    unexpected = [p for p in seen if not re.match(r"/run/(credentials|mcp-sdreal|secrets)(/|$)|/run/systemd(/incoming)?$", p)]
    assert not unexpected, unexpected
    assert client.ask("p", "dns_udp")["errno"] == "EAFNOSUPPORT"


def test_with_an_allowlist_only_the_egress_socket_is_reachable(container: Container, client: Client) -> None:
    client.open("f", "fetch")
    seen = client.ask("f", "walk", path="/run")["paths"]
    assert "/run/mcpspec/egress.sock" in seen
    unexpected = [p for p in seen if not re.match(r"/run/(credentials|mcpspec/egress\.sock$|mcpspec$|systemd$|systemd/incoming$)", p)]
    assert not unexpected, unexpected
    for path in ("/run/dbus/system_bus_socket", "/run/systemd/resolve/io.systemd.Resolve", "/run/systemd/journal/stdout", "/dev/log"):
        assert client.ask("f", "connect_unix", path=path)["errno"] == "ENOENT", path
    assert client.ask("f", "connect_unix", path="/run/mcpspec/egress.sock")["ok"]
    # resolved's stub and every other address: the instance has only its own loopback.
    assert client.ask("f", "dns_udp")["errno"] in ("ECONNREFUSED", "timeout", "EAGAIN") or not client.ask("f", "dns_udp")["ok"]
    squid_port = int(container.sh("grep -ho 'http_port 127.0.0.1:[0-9]*' /etc/mcpspec/sdreal/fetch.squid.conf").rsplit(":", 1)[1])
    assert client.ask("f", "connect_tcp", host="127.0.0.1", port=squid_port)["errno"] == "ECONNREFUSED"
    assert client.ask("f", "connect_tcp", host="10.0.0.1", port=80)["errno"] in ("ENETUNREACH", "EHOSTUNREACH", "EPERM")
    # A listener inside the instance is reachable from nowhere else.
    listened = client.ask("f", "listen", port=8080)
    assert listened["ok"] or listened["errno"] == "EPERM"  # SocketBindDeny= where the BPF framework works
    connect = "import socket; socket.create_connection(('127.0.0.1', 8080), timeout=5)"
    assert "ConnectionRefusedError" in container.run("/usr/bin/python3", "-c", connect, check=False).stderr
    # Through the proxy: a name not on the list, and a metadata address, are refused by squid.
    denied = client.ask("f", "proxy", request="GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n")
    assert denied["ok"] and " 403 " in denied["status"], denied
    metadata = client.ask("f", "proxy", request="CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n")
    assert metadata["ok"] and " 403 " in metadata["status"], metadata
    allowed_loopback = client.ask("f", "proxy", request="GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
    assert allowed_loopback["ok"] and " 403 " in allowed_loopback["status"]  # allowed name, but it resolves to loopback
    log = container.sh("cat /var/log/mcp-sdreal_fetch_squid/access.log")
    assert "denied.test" in log and "169.254.169.254" in log and "TCP_DENIED/403" in log


OWN_V4, OWN_V6 = "100.128.1.9", "2001:200:1::9"  # the host's own "public" addresses, on the container's loopback
# What squid would answer itself or fetch by another protocol: cache_object://, its manager and internal pages, TRACE, ftp.
SQUID_ITSELF = [
    "GET cache_object://own.test:8080/info HTTP/1.1\r\nHost: own.test:8080\r\n",
    "GET cache_object://127.0.0.1:3128/info HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n",
    "GET /squid-internal-mgr/info HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n",
    "GET http://localhost:3128/squid-internal-mgr/menu HTTP/1.1\r\nHost: localhost:3128\r\n",
    "GET /squid-internal-static/icons/SN.png HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n",
    "TRACE http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nMax-Forwards: 0\r\n",
    "GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n",
]
OWN_REQUESTS = [
    f"GET http://{OWN_V4}:8080/ HTTP/1.1\r\nHost: {OWN_V4}:8080\r\n", f"GET http://[{OWN_V6}]:8080/ HTTP/1.1\r\nHost: [{OWN_V6}]:8080\r\n",
    "GET http://own.test:8080/ HTTP/1.1\r\nHost: own.test:8080\r\n", "GET http://own6.test:8080/ HTTP/1.1\r\nHost: own6.test:8080\r\n",
    f"CONNECT {OWN_V4}:8080 HTTP/1.1\r\nHost: {OWN_V4}:8080\r\n", "CONNECT own6.test:8080 HTTP/1.1\r\nHost: own6.test:8080\r\n",
    f"GET http://[::ffff:{OWN_V4}]:8080/ HTTP/1.1\r\nHost: [::ffff:{OWN_V4}]:8080\r\n",
]


def test_squid_refuses_the_hosts_own_addresses_and_answers_nothing_itself(container: Container, client: Client) -> None:
    """Issue 25 items 3 and 4 on the systemd target: the squid unit shares the host's network namespace.
    The host gains public-looking addresses (added from outside, on the container's loopback), a host
    service listens on them, and the squid unit (restarted: its ExecStartPre=+ reads the addresses at
    each start) must refuse them by literal, bracketed, IPv4-mapped and name, by GET and CONNECT; and
    squid's manager, internal pages, TRACE and ftp:// must be refused without a word of squid's host."""
    podman_pid = subprocess.run([container.podman, "inspect", "-f", "{{.State.Pid}}", container.name], capture_output=True, text=True,
                                env=podman_env(), check=True).stdout.strip()
    enter = [require_tool("nsenter"), "-t", podman_pid, "-n", require_tool("ip")]
    subprocess.run([*enter, "addr", "add", f"{OWN_V4}/32", "dev", "lo"], check=True)
    subprocess.run([*enter, "-6", "addr", "add", f"{OWN_V6}/128", "dev", "lo", "nodad"], check=True)
    container.sh(f"printf '%s\\n' '{OWN_V4} own.test' '{OWN_V6} own6.test' >> /etc/hosts")
    container.sh("cd /tmp && (setsid /usr/bin/python3 -m http.server 8080 --bind :: >/dev/null 2>&1 &)")
    reach = f"import socket, time\nfor _ in range(50):\n try: socket.create_connection(('{OWN_V4}', 8080), 1); break\n except OSError: time.sleep(0.1)\nelse: raise SystemExit(1)"
    container.run("/usr/bin/python3", "-c", reach)  # the host service answers on the host's own address
    container.run("systemctl", "restart", "mcp-sdreal_open_squid.service", timeout=90)
    written = container.sh("cat /run/mcp-sdreal_open_squid/host-addresses").split()
    assert {f"{OWN_V4}/32", f"{OWN_V6}/128", "0.0.0.0/32"} <= set(written), written
    client.open("o", "open")
    close = "Connection: close\r\n\r\n"
    got = client.ask("o", "proxy_all", requests=[r + close for r in [*OWN_REQUESTS, *SQUID_ITSELF]])
    assert got["ok"], got
    statuses = [a.split("\r\n", 1)[0] for a in got["answers"]]
    assert [s for s in statuses if " 403 " not in s] == [], statuses
    leaks = ("Squid Object Cache", "Directory listing", "Build Info", "/run/", "/var/", "/etc/", "squid.pid", "cache.log")
    assert [(r, m) for r, a in zip([*OWN_REQUESTS, *SQUID_ITSELF], got["answers"], strict=True) for m in leaks if m in a.partition("\r\n\r\n")[2]] == []
    log = container.sh("cat /var/log/mcp-sdreal_open_squid/access.log")
    assert "TCP_DENIED/403" in log and "TCP_MISS" not in log and "TCP_TUNNEL" not in log, log


def test_secrets_reach_only_their_server_and_never_a_command_line_or_the_journal(container: Container, client: Client) -> None:
    client.open("s", "probe")
    client.open("n", "neighbour")
    assert client.ask("s", "read", path="/run/secrets/token")["data"] == TOKEN + "\n"
    assert client.ask("s", "env", name="GITHUB_TOKEN")["value"] == GH_TOKEN
    server = client.ask("s", "whoami")
    assert "GITHUB_TOKEN" in server["environ"] and "CREDENTIALS_DIRECTORY" in server["environ"]
    systemd_sets = {"PATH", "USER", "LOGNAME", "HOME", "SHELL", "INVOCATION_ID", "CREDENTIALS_DIRECTORY", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "LANG", "RUNTIME_DIRECTORY"}
    shim_sets = {"PWD", "SHLVL", "_"}  # bash exports these to the command it execs
    assert set(server["environ"]) <= systemd_sets | shim_sets | {"GITHUB_TOKEN", "LC_CTYPE"}, server["environ"]
    neighbour = client.ask("n", "whoami")
    assert "GITHUB_TOKEN" not in neighbour["environ"]
    assert client.ask("n", "read", path=f"/proc/{server['pid']}/environ")["errno"] in ("ENOENT", "EACCES")
    assert client.ask("n", "read", path="/etc/sdreal/gh-token")["errno"] == "EACCES"
    everywhere = container.sh(
        "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; cat /etc/systemd/system/mcp-sdreal_* /etc/mcpspec/sdreal/*; journalctl -b --no-pager -o verbose",
    )
    assert GH_TOKEN not in everywhere and TOKEN not in everywhere


def test_a_sandbox_cannot_plant_a_link_at_a_credential_source(container: Container, client: Client) -> None:
    client.open("x", "probe")
    for path in ("/etc/sdreal/token", "/etc/sdreal/planted"):
        assert client.ask("x", "symlink", target="/etc/sdreal/victim", path=path)["errno"] in ("EROFS", "EEXIST", "EACCES")
    assert client.ask("x", "unlink", path="/etc/sdreal/token")["errno"] in ("EROFS", "EACCES")
    client.open("y", "probe")
    assert client.ask("y", "read", path="/run/secrets/token")["data"] == TOKEN + "\n"


def _audit_after_a_run(container: Container, client: Client, key: str) -> str:
    """Run and stop one probe instance; returns what its audit command logged."""
    client.open(key, "probe")
    instance = _instance(client.ask(key, "whoami"))
    client.send({"close": key})
    unit = f"mcp-sdreal_probe@{instance}.service"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and container.run("systemctl", "is-active", unit, check=False).stdout.strip() in ("active", "deactivating"):
        time.sleep(0.2)
    time.sleep(0.5)
    return container.run("journalctl", "--no-pager", "-o", "cat", "-u", unit, check=False).stdout


def test_the_audit_sink_refuses_links_fifos_and_foreign_files_a_sandbox_planted(container: Container, client: Client) -> None:
    container.sh("rm -f /var/log/sdreal/audit.jsonl")
    _audit_after_a_run(container, client, "first")
    first = container.sh("cat /var/log/sdreal/audit.jsonl").splitlines()
    assert json.loads(first[-1])["server"] == "probe"
    assert container.sh("stat -c '%u %a %h' /var/log/sdreal/audit.jsonl").split() == ["0", "600", "1"]
    # The neighbour can write the sink's directory (a writable mount of a 0777 directory): it swaps the sink.
    client.open("n", "neighbour")
    attacks: list[tuple[str, dict[str, Any]]] = [
        ("symlink", {"target": "/etc/sdreal/victim"}),
        ("mkfifo", {}),
        ("write", {"data": "forged\n"}),  # a regular file, owned by the neighbour's user
    ]
    for op, arguments in attacks:
        container.sh("rm -f /var/log/sdreal/audit.jsonl")
        assert client.ask("n", op, path="/logs/audit.jsonl", **arguments)["ok"], op
        logged = _audit_after_a_run(container, client, f"after-{op}")
        assert "refusing the audit sink" in logged, (op, logged)
        assert container.sh("cat /etc/sdreal/victim") == VICTIM
    container.sh("rm -f /var/log/sdreal/audit.jsonl; ln /etc/sdreal/victim /var/log/sdreal/audit.jsonl 2>/dev/null || "
                 "{ cp /etc/sdreal/victim /var/log/sdreal/v2; ln /var/log/sdreal/v2 /var/log/sdreal/audit.jsonl; }")
    assert "hard links" in _audit_after_a_run(container, client, "after-link")
    assert container.sh("cat /etc/sdreal/victim") == VICTIM


def test_read_only_host_and_mounts(container: Container, client: Client) -> None:
    client.open("r", "probe")
    for path in ("/usr/pwned", "/etc/pwned", "/probe/pwned", "/opt/sdreal/pwned", "/var/pwned"):
        assert client.ask("r", "write", path=path)["errno"] in ("EROFS", "EACCES", "ENOENT"), path
    assert client.ask("r", "write", path="/probe/probe.py")["errno"] == "EROFS"
    assert client.ask("r", "write", path="/workspace/output/ok.txt")["ok"]
    assert client.ask("r", "read", path="/var/log/sdreal/audit.jsonl")["errno"] in ("ENOENT", "EACCES")  # /var/log is hidden
    assert container.sh("ls /opt/sdreal").split() == sorted([*PROBE_SCRIPTS, SYSCALL_PROBE.name])


def test_limits_hold(container: Container, client: Client) -> None:
    client.open("l", "limits")
    forked = client.ask("l", "fork", count=30)
    assert forked["ok"] and forked["refused"] > 0 and forked["started"] < 12, forked
    assert client.ask("l", "allocate", bytes=256 * 2**20)["errno"] == "closed"  # the kernel killed it
    client.open("t", "limits")
    closed = client.send({"wait_closed": "t", "timeout": 15})
    assert closed["ok"] and closed["after"] < 10, closed


COLLIDING = """version: 1
project: sdreal2
servers:
  s2798:
    command: [/usr/bin/python3, /opt/sdreal/probe.py]
    egress: {allow: ["allowed.test:80"]}
    tools:
      t: {effects: [writes_local]}
"""


def test_a_squid_whose_port_another_project_holds_fails_instead_of_passing_for_it(container: Container) -> None:
    """Red team: squid ports are hashed from project/server names, and sdreal2/s2798 hashes to the
    port of sdreal/fetch. Readiness used to ask only whether something listened on the port, so the
    second project's server started against the first project's squid (and its allowlist)."""
    with tempfile.TemporaryDirectory(prefix="mcpspec-sd-collide-") as work:
        spec = Path(work) / "other.yaml"
        spec.write_text(COLLIDING, encoding="utf-8")
        build = build_plan(api.load(spec, "other.yaml"), "systemd")
        ports = re.findall(r"^http_port 127\.0\.0\.1:(\d+)$", build.files["s2798.squid.conf"], flags=re.M)
        assert ports and f"http_port 127.0.0.1:{ports[0]}" in container.sh("cat /etc/mcpspec/sdreal/fetch.squid.conf"), "the names no longer collide"
        unit = "mcp-sdreal2_s2798_squid.service"
        (Path(work) / unit).write_text(build.files[unit], encoding="utf-8")
        (Path(work) / "s2798.squid.conf").write_text(build.files["s2798.squid.conf"], encoding="utf-8")
        container.run("mkdir", "-p", "/etc/mcpspec/sdreal2")
        container.put(Path(work) / unit, f"/etc/systemd/system/{unit}")
        container.put(Path(work) / "s2798.squid.conf", "/etc/mcpspec/sdreal2/s2798.squid.conf")
    container.sh("systemctl daemon-reload && systemctl start mcp-sdreal_fetch_squid.service")
    try:
        started = container.run("systemctl", "start", unit, check=False, timeout=90)
        assert started.returncode != 0, "a squid that could not listen passed for ready"
        assert container.run("systemctl", "is-active", "mcp-sdreal_fetch_squid.service", check=False).stdout.strip() == "active"
    finally:
        container.sh(f"systemctl stop {unit}; systemctl reset-failed {unit}", check=False)


def _start_host_service(container: Container) -> None:
    """The container host's services a sandbox must not reach, and proof that they answer there."""
    if container.run("systemctl", "is-active", "mcpspec-host.service", check=False).stdout.strip() != "active":
        container.run("systemd-run", "--unit=mcpspec-host.service", "/usr/bin/python3", "/opt/sdreal/host_service.py", HOST_ABSTRACT, HOST_PATH, str(HOST_PORT))
    reach = (
        "import socket,sys,time\n"
        "for _ in range(100):\n"
        "  try:\n"
        "    targets=[(socket.AF_UNIX,'\\0'+sys.argv[1]),(socket.AF_UNIX,sys.argv[2]),(socket.AF_INET,('127.0.0.1',int(sys.argv[3])))]\n"
        "    for family,address in targets:\n"
        "      s=socket.socket(family); s.connect(address); assert s.recv(64)==b'host-service-reached\\n'; s.close()\n"
        "    break\n"
        "  except OSError: time.sleep(0.1)\n"
        "else: sys.exit('the host service does not answer')\n"
    )
    container.run("/usr/bin/python3", "-c", reach, HOST_ABSTRACT, HOST_PATH, str(HOST_PORT))


def _first_answer(client: Client, port: int) -> dict[str, Any]:
    """The server's whoami, once it answers (the forwarder waits for it; without one, the test does)."""
    deadline = time.monotonic() + 20
    while True:
        me = client.http(port, "whoami")
        if me.get("ok") or time.monotonic() > deadline:
            return me
        time.sleep(0.2)


def _stop_run(container: Container, unit: str) -> None:
    container.run("systemctl", "stop", unit, check=False)
    container.run("systemctl", "reset-failed", unit, check=False)


def test_an_http_server_has_its_own_network_namespace_and_only_its_port_is_forwarded(container: Container, client: Client) -> None:
    """Red team (issue 25, item 10): an egress-denied HTTP unit shared the host's network namespace
    and reached host services on abstract unix sockets (and on the host's loopback)."""
    _start_host_service(container)
    host_netns = container.sh("readlink /proc/1/ns/net").strip()
    units = ("mcp-sdreal_web@itemten.service", "mcp-sdreal_weblisten@itemten.service", "mcp-sdreal_webfetch@itemten.service")
    try:
        container.run("systemctl", "start", *units, timeout=120)
        for port in (8941, 8942, 8944):  # the HTTP port is reachable from the host, through the forwarder
            me = _first_answer(client, port)
            assert me["ok"] and me["uid"] != 0 and "@itemten.service" in me["cgroup"], me
            assert client.http(port, "netns")["netns"] != host_netns
        # web: egress denied, no unix socket at all; weblisten may listen, so it keeps AF_UNIX,
        # and only its own network namespace keeps the host's abstract sockets away.
        for port, unix_refusal in ((8941, "EAFNOSUPPORT"), (8942, "ECONNREFUSED")):
            assert client.http(port, "connect_abstract", name=HOST_ABSTRACT)["errno"] == unix_refusal, port
            assert client.http(port, "connect_unix", path=HOST_PATH)["errno"] in (unix_refusal, "ENOENT"), port
            assert client.http(port, "connect_tcp", host="127.0.0.1", port=HOST_PORT)["errno"] == "ECONNREFUSED", port
            assert client.http(port, "connect_tcp", host="127.0.0.2", port=HOST_PORT)["errno"] in ("ECONNREFUSED", "EPERM", "ENETUNREACH"), port
            assert client.http(port, "socket", family="AF_NETLINK")["errno"] == "EAFNOSUPPORT", port
        # With an allowlist: only the egress socket, never another server's squid on the host's loopback.
        other_squid = int(container.sh("grep -ho 'http_port 127.0.0.1:[0-9]*' /etc/mcpspec/sdreal/fetch.squid.conf").rsplit(":", 1)[1])
        container.run("systemctl", "start", "mcp-sdreal_fetch_squid.service", timeout=90)
        assert client.http(8944, "connect_tcp", host="127.0.0.1", port=other_squid)["errno"] == "ECONNREFUSED"
        assert client.http(8944, "connect_abstract", name=HOST_ABSTRACT)["errno"] == "ECONNREFUSED"
        assert [p for p in client.http(8944, "walk", path="/run")["paths"] if p.endswith(".sock")] == ["/run/mcpspec/egress.sock"]
        denied = client.http(8944, "proxy", request="GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n")
        assert denied["ok"] and " 403 " in denied["status"], denied
        # Its own listener, in its namespace, is not the host's.
        assert client.http(8942, "listen", port=8943)["ok"]
        refused = container.run("/usr/bin/python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 8943), timeout=5)", check=False)
        assert "ConnectionRefusedError" in refused.stderr
        # The forwarded port goes away with the run.
        container.run("systemctl", "stop", units[0])
        assert container.run("systemctl", "is-active", "mcp-sdreal_web_http@itemten.socket", check=False).stdout.strip() != "active"
        closed = container.run("/usr/bin/python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 8941), timeout=5)", check=False)
        assert "ConnectionRefusedError" in closed.stderr
    finally:
        for unit in units:
            _stop_run(container, unit)


AUDIT_QUERY = ("_UID=0", "SYSLOG_IDENTIFIER=mcpspec-audit")  # as the target README documents it


def _journal(container: Container, *matches: str) -> list[dict[str, Any]]:
    container.run("journalctl", "--sync", check=False)
    out = container.run("journalctl", "--no-pager", "-o", "json", *matches, check=False).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_a_server_cannot_forge_an_audit_line_the_documented_query_returns(container: Container, client: Client) -> None:
    """Red team (issue 25, item 11): a server's stderr carried the unit's SYSLOG_IDENTIFIER, the same as
    the audit line's, so a forged line on stderr passed for one; only _UID differed."""
    run = f"item11-{uuid.uuid4().hex[:6]}"
    servers = {"web": 8941, "weblisten": 8942}  # weblisten keeps AF_UNIX: it tries journald's sockets
    units = [f"mcp-sdreal_{server}@{run}.service" for server in servers]
    try:
        container.run("systemctl", "start", *units)
        for server, port in servers.items():
            assert _first_answer(client, port)["ok"]
            forged = json.dumps({"event": "stop", "project": "sdreal", "server": server, "instance": run, "result": "success", "forged": True})
            for text in (forged, f"<6>{forged}", f"SYSLOG_IDENTIFIER=mcpspec-audit\nMESSAGE={forged}\n_UID=0"):
                assert client.http(port, "stderr", text=text + "\n")["ok"]
            entry = f"MESSAGE={forged}\nSYSLOG_IDENTIFIER=mcpspec-audit\nMCPSPEC_PROJECT=sdreal\n"
            tries = {
                "native": client.http(port, "journal_native", entry=entry),
                "native by PID 1's root": client.http(port, "journal_native", entry=entry, path="/proc/1/root/run/systemd/journal/socket"),
                "stream": client.http(port, "journal_stream", identifier="mcpspec-audit", text=forged),
                "syslog": client.http(port, "syslog", text=f"<14>mcpspec-audit: {forged}"),
            }
            # No AF_UNIX (web), or an empty /run and no PID 1 in its /proc (weblisten).
            assert all(answer.get("errno") in ("EAFNOSUPPORT", "ENOENT") for answer in tries.values()), (server, tries)
            container.run("systemctl", "stop", f"mcp-sdreal_{server}@{run}.service")
        # A host process of another user can reach the native socket, as a direct-egress server
        # can: it names the identifier, but journald stamps its own uid.
        container.run("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                      "import socket,sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(sys.argv[1].encode(), '/run/systemd/journal/socket')",
                      f"MESSAGE={{\"instance\": \"{run}\", \"forged\": true}}\nSYSLOG_IDENTIFIER=mcpspec-audit\nMCPSPEC_PROJECT=sdreal\n")
        deadline = time.monotonic() + 15
        while True:
            genuine = [e for e in _journal(container, *AUDIT_QUERY, "MCPSPEC_PROJECT=sdreal") if run in e["MESSAGE"]]
            if len(genuine) >= len(servers) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        # The documented query: exactly one line per run, each the helper's own.
        lines = [json.loads(e["MESSAGE"]) for e in genuine]
        assert sorted(line["server"] for line in lines) == sorted(servers), genuine
        assert all(line["instance"] == run and "forged" not in line and line["event"] == "stop" for line in lines), lines
        assert all(e["_SYSTEMD_UNIT"] in units and e["_COMM"].startswith("python") for e in genuine)
        # The forgeries did happen, under the server's own identifier and transient uid.
        for unit in units:
            own = _journal(container, f"_SYSTEMD_UNIT={unit}")
            printed = [e for e in own if '"forged": true' in str(e.get("MESSAGE"))]
            assert len(printed) >= 3 and all(e["SYSLOG_IDENTIFIER"] == unit.split("@")[0] and e["_UID"] != "0" for e in printed), printed
        nobody = [e for e in _journal(container, "SYSLOG_IDENTIFIER=mcpspec-audit", "MCPSPEC_PROJECT=sdreal") if run in str(e.get("MESSAGE")) and e["_UID"] == "65534"]
        assert nobody, "the control (a forgery by another host user) did not reach the journal"
    finally:
        for unit in units:
            _stop_run(container, unit)


# What the project's syscall policy refuses, as the probe names it: EPERM in every unit.
REFUSED = (
    "io_uring_setup", "keyctl_session_keyring_id", "keyctl_read_session_keyring", "add_key", "request_key", "userfaultfd",
    "perf_event_open", "bpf", "ptrace_attach_child", "ptrace_traceme", "process_vm_readv_child", "unshare_user",
    "unshare_mount", "unshare_net", "clone_newuser", "setns", "mount_tmpfs", "kexec_load", "init_module", "personality_no_randomize",
)
FAMILIES = ("unix", "inet", "inet6")


def _syscalls(answer: dict[str, Any]) -> dict[str, str]:
    assert answer.get("ok") and answer["status"] == 0, answer
    found: dict[str, str] = json.loads(answer["stdout"])
    return found


def _assert_policy(found: dict[str, str], families: tuple[str, ...], where: str) -> None:
    wrong = {name: found[name] for name in REFUSED if found[name] != "EPERM"}
    assert not wrong, (where, wrong)
    # clone3 cannot be filtered by its flags: ENOSYS (RestrictNamespaces=), so libc falls back to clone.
    assert (found["clone3_newuser"], found["clone_plain"], found["socketpair_unix"]) == ("ENOSYS", "ok", "ok"), (where, found)
    for family in ("vsock", "netlink", "packet"):
        assert found[f"socket_{family}"] == "EAFNOSUPPORT", (where, family, found)
    for family in FAMILIES:
        assert found[f"socket_{family}"] == ("ok" if family in families else "EAFNOSUPPORT"), (where, family, found)
    # AF_INET with upper bits set: systemd compares all 64 bits and refuses it even where AF_INET is allowed.
    assert found["socket_inet_upper_bits"] == "EAFNOSUPPORT", (where, found)
    assert found["ioctl_tiocsti"] != "ok" and found["ioctl_tiocsti_upper_bits"] != "ok", (where, found)  # no terminal to push into


def test_every_unit_refuses_what_the_syscall_policy_refuses(container: Container, client: Client) -> None:
    """Red team (issue 25, item 2): SystemCallFilter=@system-service keeps @aio, and io_uring's
    IORING_OP_SOCKET made AF_UNIX, AF_INET and AF_VSOCK sockets in an egress-denied stdio unit
    (RestrictAddressFamilies=none sees only socket()); @keyring, userfaultfd and process_vm_readv
    were open too. Each unit kind runs the shared syscall probe: io_uring_setup itself fails, so
    no io_uring operation can run."""
    probe = ["/usr/bin/python3", "/probe/syscall_probe.py"]
    stdio = {"probe": (), "fetch": ("unix", "inet", "inet6")}
    for server, families in stdio.items():
        client.open(f"sc-{server}", server)
        _assert_policy(_syscalls(client.ask(f"sc-{server}", "run", argv=probe)), families, server)
    http = {"web": (8941, ("inet", "inet6")), "weblisten": (8942, ("unix", "inet", "inet6")), "webfetch": (8944, ("unix", "inet", "inet6"))}
    units = [f"mcp-sdreal_{server}@syscalls.service" for server in http]
    try:
        container.run("systemctl", "start", *units, timeout=120)
        for server, (port, families) in http.items():
            assert _first_answer(client, port)["ok"]
            _assert_policy(_syscalls(client.http(port, "run", argv=probe)), families, server)
    finally:
        for unit in units:
            _stop_run(container, unit)
    # The control: the filter the target wrote before, on the same unit, let all of it through.
    client.open("sc-old", "oldfilter")
    old = _syscalls(client.ask("sc-old", "run", argv=probe))
    opened = {name for name in ("io_uring_setup", "keyctl_session_keyring_id", "add_key", "userfaultfd", "process_vm_readv_child") if old[name] == "ok"}
    assert opened == {"io_uring_setup", "keyctl_session_keyring_id", "add_key", "userfaultfd", "process_vm_readv_child"}, old
