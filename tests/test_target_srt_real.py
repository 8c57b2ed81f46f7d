"""Proof with real processes: a generated srt launcher runs the `mcp` SDK probe server under the
real sandbox-runtime (npm @anthropic-ai/sandbox-runtime, pinned in tests/tools), and each attack
on a boundary the spec draws fails.

Every session runs in network, mount and pid namespaces of its own, as an unprivileged user
(the launcher refuses root): its loopback holds the listeners (127.0.0.1, ::1, and 10.0.0.1 added
to it), and its /etc/hosts (bound over the host's in that mount namespace only) names them. No
packet leaves the namespace; nothing of the machine's network is touched.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import require_tool
from mcpspec.api import load
from mcpspec.targets.build import build_plan
from mcpspec.targets.writer import write_build

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import Sandbox, call_tools, sandbox_python_matches

NOBODY = 65534
PORT = 8471  # inside the session's own network namespace: it clashes with nothing
OTHER_PORT = 8472
CANARY = "canary-7f3e9d41"
# A directory name and a value every layer must carry as they are: the launcher (sh), the settings (JSON), srt's bwrap.
HOSTILE_DIR = "ro dir $(touch PWNED) `touch PWNED` 'q' \"d\" ; x"
HOSTILE_VALUE = "a b $(touch PWNED) ${HOME} `id` 'q' \"d\" \\ %s"
VSCODE_VALUE = HOSTILE_VALUE.replace("${HOME} ", "")
LISTENER = """
import http.server, socket, sys, threading
class Reply(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"reached")
    def log_message(self, *args):
        pass
class Six(http.server.HTTPServer):
    address_family = socket.AF_INET6
servers = [http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Reply), Six(("::1", int(sys.argv[1])), Reply),
           http.server.HTTPServer(("10.0.0.1", int(sys.argv[1])), Reply), http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Reply)]
for server in servers:
    threading.Thread(target=server.serve_forever, daemon=True).start()
open(sys.argv[3], "w").close()
threading.Event().wait()
"""
# Runs as root in the session's new namespaces, then becomes nobody and starts the launcher.
SESSION = f"""set -e
ip link set lo up
ip addr add 10.0.0.1/32 dev lo
mount --bind "$1" /etc/hosts
/usr/bin/python3 "$2" {PORT} {OTHER_PORT} "$3" &
while [ ! -e "$3" ]; do sleep 0.05; done
exec setpriv --reuid {NOBODY} --regid {NOBODY} --clear-groups --inh-caps=-all --bounding-set=-all "$4"
"""
# Asks srt's proxy for a URL and prints its status line and its X-Proxy-Error header.
VIA_PROXY = """
import json, os, sys, urllib.parse, http.client
proxy = urllib.parse.urlsplit(os.environ["http_proxy"])
out = []
for url in sys.argv[1:]:
    try:
        c = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=5)
        headers = {}
        if proxy.username:
            import base64
            raw = urllib.parse.unquote(proxy.username) + ":" + urllib.parse.unquote(proxy.password or "")
            headers["Proxy-Authorization"] = "Basic " + base64.b64encode(raw.encode()).decode()
        c.request("GET", url, headers=headers)
        r = c.getresponse()
        out.append([url, r.status, r.getheader("X-Proxy-Error"), r.read(200).decode("utf-8", "replace")])
    except OSError as exc:
        out.append([url, None, type(exc).__name__, ""])
print(json.dumps(out))
"""
UNIX = """
import json, socket
out = {}
for name, address in (("abstract", b"\\0mcpspec-srt-probe"), ("path", "/tmp/mcpspec-srt.sock")):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(address)
        out[name] = "bound"
    except OSError as exc:
        out[name] = type(exc).__name__
print(json.dumps(out))
"""


class Box:
    """One built srt launcher for the module, with its host directories."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        base = sandbox.base
        self.rw = base / "rw"
        self.ro = base / "ro"
        self.nested = self.rw / "keep"  # a ro mount inside the rw one
        self.outside = base / "outside"  # nothing mounts it
        self.home = base / "home"  # a stand-in for the user's home, with a secret in it
        self.hostile = base / HOSTILE_DIR
        for path in (self.rw, self.ro, self.nested, self.outside, self.home, self.hostile):
            path.mkdir()
        (self.hostile / "inside.txt").write_text("hostile-ok")
        (base / "tmp").mkdir()
        (base / "tmp").chmod(0o1777)  # VS Code's temporary directory, where srt puts its sockets (removed with the rest)
        os.chown(self.rw, NOBODY, NOBODY)
        (self.ro / "data.txt").write_text("ro-data")
        (self.nested / "keep.txt").write_text("keep")
        (self.home / ".ssh").mkdir()
        (self.home / ".ssh" / "id_ed25519").write_text("home-secret")
        for path in (self.outside, self.home, self.home / ".ssh"):
            path.chmod(0o777)
        (self.home / ".ssh" / "id_ed25519").chmod(0o644)
        self.hosts = base / "hosts"
        self.hosts.write_text("127.0.0.1 localhost\n::1 localhost\n127.0.0.1 allowed.mcpspec.test unlisted.mcpspec.test\n"
                              "10.0.0.1 private.mcpspec.test\n::1 six.mcpspec.test\n")
        (base / "listener.py").write_text(LISTENER)
        (base / "session.sh").write_text(SESSION)
        (sandbox.probe_dir / "via_proxy.py").write_text(VIA_PROXY)
        (sandbox.probe_dir / "unix.py").write_text(UNIX)
        for name in ("via_proxy.py", "unix.py"):
            (sandbox.probe_dir / name).chmod(0o644)
        self.server_yaml = f"""
    mounts:
      - {{from: {sandbox.site}, to: {sandbox.site}}}
      - {{from: {sandbox.probe_dir}, to: {sandbox.probe_dir}}}
      - {{from: {self.ro}, to: {self.ro}}}
      - {{from: {self.rw}, to: {self.rw}, mode: rw}}
      - {{from: {self.nested}, to: {self.nested}}}
      - {{from: {json.dumps(str(self.hostile))}, to: {json.dumps(str(self.hostile))}}}
    egress:
      default: deny
      allow: ["allowed.mcpspec.test:{PORT}", "private.mcpspec.test:{PORT}", "six.mcpspec.test:{PORT}"]
"""
        self.launcher = self.build("srt", self.server_yaml)

    def build(self, name: str, server_yaml: str, value: str = HOSTILE_VALUE) -> Path:
        sandbox = self.sandbox
        spec = self.spec(name, server_yaml, value)
        build = build_plan(load(spec), "srt")
        failing = [f"{r.code} {r.message}" for r in build.findings if r.suppression is None and r.severity in ("critical", "high", "error")]
        assert not failing, failing
        out = sandbox.base / f"out-{name}"
        write_build(out, build)
        return out / "probe.sh"

    def spec(self, name: str, server_yaml: str, value: str = HOSTILE_VALUE) -> Path:
        sandbox = self.sandbox
        spec = sandbox.base / f"{name}.yaml"
        spec.write_text(f"""version: 1
project: e2e
servers:
  probe:
    command: [/usr/bin/python3, {sandbox.probe_dir}/probe_server.py, {sandbox.marker}]
    env: {{inherit: none, set: {{PYTHONPATH: {sandbox.site}, HOSTILE: {json.dumps(value)}}}}}
    runtime: {{memory: 1Gi, pids: 64}}
{server_yaml}""", encoding="utf-8")
        return spec

    def session(self, calls: list[tuple[str, dict[str, Any]]], launcher: Path | None = None) -> list[Any]:
        """Call the tools through the launcher, run as nobody in a network, mount and pid namespace of its own."""
        base = self.sandbox.base
        ready = base / f"ready-{os.urandom(4).hex()}"
        wrapper = base / f"session-{ready.name}.sh"
        wrapper.write_text(f"#!/bin/sh\nexec /usr/bin/unshare --net --mount --pid --fork --mount-proc --kill-child /bin/sh {base}/session.sh "
                           f"{self.hosts} {base}/listener.py {ready} {launcher or self.launcher}\n")
        wrapper.chmod(0o755)
        srt_bin = str(Path(require_tool("srt")).parent)
        return call_tools(wrapper, calls, {"PATH": f"{srt_bin}:/usr/local/bin:/usr/bin:/bin", "MCPSPEC_CANARY": CANARY}, timeout=60)


@pytest.fixture(scope="module")
def box() -> Iterator[Box]:
    for tool in ("srt", "node", "bwrap", "socat", "rg", "setpriv", "unshare", "ip", "/usr/bin/python3"):
        require_tool(tool)
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("the srt attacks make network and mount namespaces, so run as root (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("the srt attacks make network and mount namespaces: run as root")
    if not sandbox_python_matches():
        pytest.fail("/usr/bin/python3 must be the same minor version as the test interpreter (the probe server runs on it)")
    sandbox = Sandbox()
    sandbox.base.chmod(0o755)
    yield Box(sandbox)
    sandbox.cleanup()


def _spawn(argv: list[str]) -> tuple[str, dict[str, Any]]:
    return ("spawn", {"argv": argv})


def test_a_file_the_spec_does_not_mount_is_not_there(box: Box) -> None:
    got = box.session([
        ("read_path", {"path": str(box.home / ".ssh" / "id_ed25519")}),
        ("read_path", {"path": str(box.ro / "data.txt")}),
        ("list_dir", {"path": str(box.sandbox.base)}),
        ("read_path", {"path": "/etc/shadow"}),
        ("read_path", {"path": "/etc/hostname"}),
        ("list_dir", {"path": str(Path(require_tool("srt")).resolve().parents[1])}),
    ])
    assert got[0]["ok"] is False, got[0]  # the user's key, in a directory nobody mounted
    assert got[1] == {"ok": True, "data": "ro-data"}  # what the spec mounts is there
    assert set(got[2]["entries"]) <= {"probe", "site", "ro", "rw", HOSTILE_DIR}, got[2]  # beside the mounts: nothing of the host
    assert got[3]["ok"] is False and got[4]["ok"] is False  # /etc holds only the runtime's files
    assert got[5].get("entries", []) in ([], ["vendor"]), got[5]  # srt's install: only its seccomp helper


def test_writes_reach_the_host_only_in_rw_mounts(box: Box) -> None:
    got = box.session([
        ("write_path", {"path": str(box.rw / "made.txt"), "data": "rw"}),
        ("write_path", {"path": str(box.ro / "data.txt"), "data": "overwritten"}),
        ("write_path", {"path": str(box.nested / "keep.txt"), "data": "overwritten"}),
        ("write_path", {"path": str(box.outside / "planted.txt"), "data": "escaped"}),
        ("write_path", {"path": str(box.home / ".bashrc"), "data": "escaped"}),
        ("write_path", {"path": "/tmp/planted.txt", "data": "escaped"}),
    ])
    assert got[0] == {"ok": True} and (box.rw / "made.txt").read_text() == "rw"
    assert got[1]["ok"] is False and got[2]["ok"] is False, got[1:3]
    assert (box.ro / "data.txt").read_text() == "ro-data" and (box.nested / "keep.txt").read_text() == "keep"
    # What the server writes elsewhere lands in the sandbox's own memory, never on the host.
    assert not (box.outside / "planted.txt").exists() and not (box.home / ".bashrc").exists()
    assert not Path("/tmp/planted.txt").exists()


def test_a_link_planted_in_a_writable_mount_leads_nowhere(box: Box) -> None:
    victim = box.outside / "victim.txt"
    victim.write_text("untouched")
    victim.chmod(0o666)
    got = box.session([
        ("replace_with_symlink", {"path": str(box.rw / "to-outside"), "target": str(victim)}),
        ("write_path", {"path": str(box.rw / "to-outside"), "data": "escaped"}),
        ("replace_with_symlink", {"path": str(box.rw / "to-ro"), "target": str(box.ro / "data.txt")}),
        ("write_path", {"path": str(box.rw / "to-ro"), "data": "escaped"}),
        ("replace_with_symlink", {"path": str(box.rw / "to-home"), "target": str(box.home / ".ssh")}),
        ("list_dir", {"path": str(box.rw / "to-home")}),
    ])
    assert got[0]["ok"] and got[2]["ok"] and got[4]["ok"], got
    assert victim.read_text() == "untouched" and (box.ro / "data.txt").read_text() == "ro-data"
    assert got[3]["ok"] is False, got[3]
    assert "id_ed25519" not in got[5].get("entries", []), got[5]
    # The links stay on the host: the next run must not follow them either.
    got = box.session([("write_path", {"path": str(box.rw / "to-outside"), "data": "escaped"})])
    assert victim.read_text() == "untouched"


def test_a_mount_path_that_became_a_link_is_refused(box: Box) -> None:
    linked = box.sandbox.base / "linked"
    linked.symlink_to(box.home)
    launcher = box.build("linked", f"""
    mounts:
      - {{from: {box.sandbox.site}, to: {box.sandbox.site}}}
      - {{from: {box.sandbox.probe_dir}, to: {box.sandbox.probe_dir}}}
      - {{from: {linked}, to: {linked}}}
""")
    done = subprocess.run(["/usr/bin/setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", str(launcher)],
                          env={"PATH": f"{Path(require_tool('srt')).parent}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    assert done.returncode == 125, done
    assert f"mount path {linked} is a symbolic link" in done.stderr
    done = subprocess.run([str(launcher)], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    assert done.returncode == 125 and "refusing to start as root" in done.stderr, done


def test_the_hosts_loopback_is_out_of_reach_on_both_families(box: Box) -> None:
    got = box.session([
        ("connect", {"host": "127.0.0.1", "port": PORT}),
        ("connect", {"host": "::1", "port": PORT}),
        ("connect", {"host": "10.0.0.1", "port": PORT}),
        ("listen", {"port": OTHER_PORT}),
        _spawn(["/usr/bin/python3", f"{box.sandbox.probe_dir}/via_proxy.py", f"http://127.0.0.1:{PORT}/", f"http://[::1]:{PORT}/",
                f"http://localhost:{OTHER_PORT}/"]),
    ])
    # Direct connections: the sandbox's own loopback has nothing on these ports, and nothing else is routed.
    assert [g["ok"] for g in got[:3]] == [False, False, False], got[:3]
    # A listener of its own, on its own loopback, is not the host's (whose OTHER_PORT is taken).
    assert got[3].get("ok") is True, got[3]
    answers = json.loads(got[4]["stdout"])
    # The proxy answers each request (so these are its refusals), and none reaches a listener.
    assert [status for _url, status, _mark, _body in answers] == [403, 403, 403], answers


def test_only_a_listed_name_on_its_port_gets_through_the_proxy(box: Box) -> None:
    got = box.session([_spawn(["/usr/bin/python3", f"{box.sandbox.probe_dir}/via_proxy.py",
                               f"http://unlisted.mcpspec.test:{PORT}/", f"http://allowed.mcpspec.test:{OTHER_PORT}/",
                               f"http://10.0.0.1:{PORT}/"])])
    answers = json.loads(got[0]["stdout"])
    # Refused by the allowlist itself, before any name is resolved.
    assert [(status, mark) for _url, status, mark, _body in answers] == [(403, "blocked-by-allowlist")] * 3, answers


def test_an_allowed_name_that_resolves_to_a_refused_address_is_refused(box: Box) -> None:
    got = box.session([_spawn(["/usr/bin/python3", f"{box.sandbox.probe_dir}/via_proxy.py",
                               f"http://allowed.mcpspec.test:{PORT}/", f"http://private.mcpspec.test:{PORT}/", f"http://six.mcpspec.test:{PORT}/"]),
                       ("http_get", {"url": f"http://private.mcpspec.test:{PORT}/"})])
    answers = json.loads(got[0]["stdout"])
    assert all(status is not None and status != 200 and "reached" not in body for _url, status, _mark, body in answers), answers
    assert all(mark != "blocked-by-allowlist" for _url, _status, mark, _body in answers), answers  # listed: the address refused them
    assert got[1]["ok"] is False, got[1]


def test_the_server_gets_no_host_variable_and_no_host_process(box: Box) -> None:
    got = box.session([("environment", {}), ("cmdlines", {}), ("read_path", {"path": "/proc/1/environ"}),
                       _spawn(["/usr/bin/python3", f"{box.sandbox.probe_dir}/unix.py"]), ("identity", {}),
                       ("read_path", {"path": str(box.hostile / "inside.txt")})])
    assert got[5] == {"ok": True, "data": "hostile-ok"}, got[5]  # a mount whose name is shell and JSON syntax is there, as named
    # Nothing of the name or the value ran: no PWNED where the launcher, srt or the server could have made one.
    assert not [place for place in (Path.cwd(), box.sandbox.base, box.launcher.parent, Path("/"), box.rw) if (place / "PWNED").exists()]
    env = got[0]["env"]
    assert "MCPSPEC_CANARY" not in env and CANARY not in json.dumps(got), env
    assert env["PYTHONPATH"] == str(box.sandbox.site) and env["HOSTILE"] == HOSTILE_VALUE, env
    # srt, the session and its listeners are out of sight: the sandbox sees its own processes only.
    for cmdline in got[1]["cmdlines"].values():
        assert not any(word in cmdline for word in ("cli.js", "listener.py", "session", "setpriv", "unshare", "bwrap")), cmdline
    assert json.loads(got[3]["stdout"]) == {"abstract": "PermissionError", "path": "PermissionError"}, got[3]
    assert got[4]["uid"] == NOBODY or got[4].get("euid") == NOBODY, got[4]


# --- VS Code's own sandbox (`--target client --client vscode --via srt`) ---

# What VS Code does with the mcp.json it is given (mcpSandboxService.ts, microsoft/vscode): it keeps only these keys of
# the block's filesystem and network, adds ~/.npm and the entry's cwd to allowWrite and registry.npmjs.org to
# allowedDomains, and runs `srt --settings FILE COMMAND ARGS...` in the entry's cwd with TMPDIR set to its own directory.
def _as_vscode_runs_it(box: Box) -> Path:
    from mcpspec.targets.base import BuildOptions

    base = box.sandbox.base
    # VS Code expands ${...} in an entry's arguments (the build refuses such a value): the rest of the hostile value stays.
    spec = box.spec("vscode", box.server_yaml, VSCODE_VALUE)
    build = build_plan(load(spec), "client", options=BuildOptions(client="vscode", via="srt"))
    failing = [f"{r.code} {r.message}" for r in build.findings if r.suppression is None and r.severity in ("critical", "high", "error")]
    assert not failing, failing
    config = json.loads(build.files[".vscode/mcp.json"])
    entry, block = config["servers"]["probe"], config["sandbox"]
    assert entry["sandboxEnabled"] is True
    filesystem, network = block["filesystem"], block["network"]
    settings = {key: value for key, value in block.items() if key not in ("filesystem", "network")}
    settings["filesystem"] = {"allowWrite": [*filesystem["allowWrite"], "~/.npm", entry["cwd"]],
                              "denyRead": filesystem["denyRead"], "denyWrite": filesystem["denyWrite"]}
    settings["network"] = {"allowedDomains": [*network["allowedDomains"], "registry.npmjs.org"], "deniedDomains": network["deniedDomains"]}
    (base / "vscode-settings.json").write_text(json.dumps(settings))
    (box.home / ".npm").mkdir(exist_ok=True)
    (box.home / ".npm").chmod(0o777)
    words = " ".join(shlex.quote(word) for word in [entry["command"], *entry["args"]])
    wrapper = base / "vscode-launch.sh"
    wrapper.write_text(f"#!/bin/sh\nset -e\nexport HOME={shlex.quote(str(box.home))}\nexport TMPDIR=$(mktemp -d {base}/tmp/vscode.XXXXXX)\ncd {shlex.quote(entry['cwd'])}\n"
                       f"exec srt --settings {base}/vscode-settings.json -- {words}\n")
    wrapper.chmod(0o755)
    return wrapper


def test_vscode_s_sandbox_writes_only_the_rw_mounts(box: Box) -> None:
    got = box.session([
        ("read_path", {"path": str(box.home / ".ssh" / "id_ed25519")}),
        ("write_path", {"path": str(box.rw / "vscode.txt"), "data": "rw"}),
        ("write_path", {"path": str(box.home / ".npm" / "planted"), "data": "escaped"}),
        ("write_path", {"path": str(box.ro / "data.txt"), "data": "overwritten"}),
        ("write_path", {"path": str(box.nested / "keep.txt"), "data": "overwritten"}),
        ("write_path", {"path": str(box.outside / "vscode-planted.txt"), "data": "escaped"}),
        ("environment", {}),
        ("replace_with_symlink", {"path": str(box.rw / "vscode-link"), "target": str(box.outside / "vscode-victim.txt")}),
        ("write_path", {"path": str(box.rw / "vscode-link"), "data": "escaped"}),
    ], launcher=_as_vscode_runs_it(box))
    assert got[0]["ok"] is False, got[0]  # ~ is denied
    assert got[1] == {"ok": True} and (box.rw / "vscode.txt").read_text() == "rw"
    assert not (box.home / ".npm" / "planted").exists(), got[2]  # VS Code makes ~/.npm writable: the block denies it back
    assert got[3]["ok"] is False and got[4]["ok"] is False, got[3:5]
    assert (box.ro / "data.txt").read_text() == "ro-data" and (box.nested / "keep.txt").read_text() == "keep"
    assert not (box.outside / "vscode-planted.txt").exists()
    assert "MCPSPEC_CANARY" not in got[6]["env"] and "HOME" not in got[6]["env"], got[6]  # env -i: not VS Code's environment
    assert got[6]["env"]["HOSTILE"] == VSCODE_VALUE, got[6]
    assert got[7]["ok"] and not (box.outside / "vscode-victim.txt").exists(), got[7:]  # a planted link leads nowhere


def test_vscode_s_sandbox_refuses_what_vs_code_adds(box: Box) -> None:
    got = box.session([_spawn(["/usr/bin/python3", f"{box.sandbox.probe_dir}/via_proxy.py", "http://registry.npmjs.org/",
                               f"http://unlisted.mcpspec.test:{PORT}/", f"http://allowed.mcpspec.test:{PORT}/"]),
                       ("connect", {"host": "127.0.0.1", "port": PORT}), ("connect", {"host": "::1", "port": PORT})],
                      launcher=_as_vscode_runs_it(box))
    assert got[0].get("status") == 0, got[0]
    answers = json.loads(got[0]["stdout"])
    # Refused by srt's proxy: the first two before any name is resolved; the listed name for its loopback address.
    assert [status for _url, status, _mark, _body in answers] == [403, 403, 403], answers
    assert [mark for _url, _status, mark, _body in answers][:2] == ["blocked-by-allowlist"] * 2, answers
    assert got[1]["ok"] is False and got[2]["ok"] is False, got[1:]


def test_memory_and_processes_stop_at_the_rlimits(box: Box) -> None:
    got = box.session([("allocate", {"megabytes": 1536}), ("allocate", {"megabytes": 64}), ("fork_many", {"count": 100})])
    assert got[0] == {"ok": False, "error": "MemoryError"} and got[1]["ok"] is True, got[:2]  # runtime.memory 1Gi (RLIMIT_AS)
    assert got[2]["started"] < 64 and got[2]["error"], got[2]  # runtime.pids 64 (RLIMIT_NPROC)
