"""Red-team attacks on `--target srt` and VS Code's srt with the real sandbox-runtime: each test runs an attack from inside
the sandboxed server through the sessions of test_target_srt_real.py and fails if it gets through."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

import test_target_srt_real as real
from mcpspec.api import load
from mcpspec.targets.build import build_plan
from mcpspec.targets.writer import write_build
from test_target_srt_real import Box, _as_vscode_runs_it

box = real.box  # the session's fixture, shared with that module

# The directories under the home that srt makes writable unless its read rules hide them (sandbox-utils.js, 0.0.83).
CONVENIENCE = (".npm/_logs", ".claude/debug")


def _home_with_convenience_dirs(box: Box, name: str) -> Path:
    home = box.sandbox.base / name
    for relative in CONVENIENCE:
        (home / relative).mkdir(parents=True, exist_ok=True)
    for path in (home, *home.rglob("*")):
        path.chmod(0o777)
    return home


def _mounts(box: Box, *extra: str) -> str:
    lines = [f"      - {{from: {box.sandbox.site}, to: {box.sandbox.site}}}",
             f"      - {{from: {box.sandbox.probe_dir}, to: {box.sandbox.probe_dir}}}", *(f"      - {line}" for line in extra)]
    return "\n    mounts:\n" + "\n".join(lines) + "\n"


def _build(box: Box, name: str, server_yaml: str, home: Path) -> Path:
    """An srt build of the probe whose environment names HOME (as `inherit: minimal` does), where srt finds the home."""
    spec = box.spec(name, server_yaml)
    text = spec.read_text(encoding="utf-8").replace("set: {PYTHONPATH:", f"set: {{HOME: {home}, PYTHONPATH:", 1)
    spec.write_text(text, encoding="utf-8")
    build = build_plan(load(spec), "srt")
    out = box.sandbox.base / f"out-{name}"
    write_build(out, build)
    return out / "probe.sh"


def test_a_read_only_home_gets_no_write_srt_adds(box: Box) -> None:
    home = _home_with_convenience_dirs(box, "home-ro")
    spec = _mounts(box, f"{{from: {home}, to: {home}}}")
    launcher = _build(box, "home-ro", spec, home)
    got = box.session([("write_path", {"path": str(home / relative / "planted.txt"), "data": "escaped"}) for relative in CONVENIENCE],
                      launcher=launcher)
    assert not [relative for relative in CONVENIENCE if (home / relative / "planted.txt").exists()], got


def test_vscode_a_project_in_the_home_gets_no_write_srt_adds(box: Box) -> None:
    """VS Code leaves ~ readable when a mount lies in a home, and srt then makes its convenience dirs of ~ writable."""
    home = Path(tempfile.mkdtemp(prefix="mcpspec-redteam-", dir="/home"))
    try:
        home.chmod(0o777)
        for relative in CONVENIENCE:
            (home / relative).mkdir(parents=True)
        project = home / "project"
        project.mkdir()
        for path in (home, *home.rglob("*")):
            path.chmod(0o777)
        saved = box.server_yaml, box.home
        box.server_yaml, box.home = _mounts(box, f"{{from: {project}, to: {project}, mode: rw}}"), home
        try:
            launcher = _as_vscode_runs_it(box)
        finally:
            box.server_yaml, box.home = saved
        got = box.session([("write_path", {"path": str(home / relative / "planted.txt"), "data": "escaped"}) for relative in CONVENIENCE]
                          + [("write_path", {"path": str(project / "made.txt"), "data": "rw"})], launcher=launcher)
        assert got[-1] == {"ok": True}, got  # the spec's rw mount is writable: the session ran
        assert not [relative for relative in CONVENIENCE if (home / relative / "planted.txt").exists()], got
    finally:
        shutil.rmtree(home)


# Asks srt's proxy to CONNECT to each authority and prints each status line (srt puts the refusal's class there).
CONNECT = """
import base64, json, os, socket, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["http_proxy"])
raw = urllib.parse.unquote(proxy.username or "") + ":" + urllib.parse.unquote(proxy.password or "")
lines = []
for authority in sys.argv[1:]:
    with socket.create_connection((proxy.hostname, proxy.port), timeout=5) as s:
        s.sendall(f"CONNECT {authority} HTTP/1.1\\r\\nHost: {authority}\\r\\nProxy-Authorization: Basic "
                  f"{base64.b64encode(raw.encode()).decode()}\\r\\n\\r\\n".encode())
        lines.append(s.recv(200).decode("latin1").split("\\r\\n")[0])
print(json.dumps(lines))
"""


def test_vscode_a_name_resolving_to_a_denied_address_is_refused_for_it(box: Box) -> None:
    """VS Code drops deniedResolvedAddresses: the spec's denied address must reach srt another way (deniedDomains)."""
    (box.sandbox.probe_dir / "connect.py").write_text(CONNECT)
    (box.sandbox.probe_dir / "connect.py").chmod(0o644)
    saved = box.server_yaml
    box.server_yaml = _mounts(box) + f"""    egress:
      default: deny
      allow: ["private.mcpspec.test:{real.PORT}"]
      deny: [10.0.0.1]
"""
    try:
        launcher = _as_vscode_runs_it(box)
    finally:
        box.server_yaml = saved
    got = box.session([("spawn", {"argv": ["/usr/bin/python3", str(box.sandbox.probe_dir / "connect.py"), f"private.mcpspec.test:{real.PORT}"]})],
                      launcher=launcher)
    lines = json.loads(got[0]["stdout"])
    # Refused as a denied address (srt's first reason), not only as one of this namespace's own addresses.
    assert lines == ["HTTP/1.1 403 resolved to a deny-listed address"], lines


def test_vscode_a_server_with_no_writable_mount_writes_nothing(box: Box) -> None:
    """With no rw mount and no workdir the entry's cwd is /, which VS Code makes writable: the block must deny it back."""
    victim = box.outside / "root-cwd"
    victim.mkdir()
    victim.chmod(0o777)
    saved = box.server_yaml
    box.server_yaml = _mounts(box, f"{{from: {box.ro}, to: {box.ro}}}")
    try:
        launcher = _as_vscode_runs_it(box)
    finally:
        box.server_yaml = saved
    got = box.session([("write_path", {"path": str(victim / "planted.txt"), "data": "escaped"}),
                       ("write_path", {"path": str(box.ro / "data.txt"), "data": "overwritten"}),
                       ("read_path", {"path": str(box.ro / "data.txt")})], launcher=launcher)
    assert got[2] == {"ok": True, "data": "ro-data"}, got  # the session ran, its mount is there
    assert not (victim / "planted.txt").exists() and (box.ro / "data.txt").read_text() == "ro-data", got


def test_a_writable_tmp_cannot_redirect_srt_s_proxy_socket(box: Box) -> None:
    """With a rw mount of /tmp the server renamed srt's proxy sockets (in the launcher's temporary directory, and in every
    other srt server's) and linked a host Unix socket in their place; srt's bridge connected it there. The launcher denies
    writes to its own directory (denyWrite), and the build refuses a writable mount that holds /tmp, for the others'."""
    build = build_plan(load(box.spec("tmp-rw", _mounts(box, "{from: /tmp, to: /tmp, mode: rw}"))), "srt")
    assert build.blocked and any("holds /tmp" in r.message for r in build.results if r.code == "TG004"), [r.message for r in build.results]

def test_vscode_refuses_a_writable_tmp_where_srt_keeps_its_proxy_sockets(box: Box) -> None:
    """VS Code's srt keeps its proxy sockets in VS Code's temporary directory (under /tmp): the block cannot deny writes to a
    directory it cannot name, so a writable /tmp is refused (before, the server redirected the sockets as above)."""
    saved = box.server_yaml
    box.server_yaml = _mounts(box, "{from: /tmp, to: /tmp, mode: rw}")
    try:
        with pytest.raises(AssertionError, match="holds /tmp"):
            _as_vscode_runs_it(box)
    finally:
        box.server_yaml = saved


def test_a_writable_directory_on_srt_s_path_is_refused(box: Box) -> None:
    """srt finds bubblewrap, socat, ripgrep and which on the PATH it is started with (the server's): a program the server
    plants there in one run would run on the host, outside any sandbox, in the next."""
    tools = box.rw / "tools"
    tools.mkdir()
    shutil.chown(tools, "nobody")
    marker = box.outside / "ran-on-the-host"
    spec = _mounts(box, f"{{from: {box.rw}, to: {box.rw}, mode: rw}}")
    spec_file = box.spec("path-rw", spec)
    text = spec_file.read_text(encoding="utf-8").replace("set: {PYTHONPATH:", f"set: {{PATH: \"{tools}:/usr/local/bin:/usr/bin:/bin\", PYTHONPATH:", 1)
    spec_file.write_text(text, encoding="utf-8")
    build = build_plan(load(spec_file), "srt")
    out = box.sandbox.base / "out-path-rw"
    write_build(out, build)
    launcher = out / "probe.sh"
    planted = [("write_path", {"path": str(tools / name), "data": f"#!/bin/sh\necho {name} >> {marker}\nexec /usr/bin/{name} \"$@\"\n"})
               for name in ("bwrap", "socat", "rg", "which")]
    chmod = ("spawn", {"argv": ["/bin/chmod", "755", *(str(tools / name) for name in ("bwrap", "socat", "rg", "which"))]})
    try:
        box.session([*planted, chmod], launcher=launcher)
        box.session([("environment", {})], launcher=launcher)
    except AssertionError as refused:
        assert "on the PATH srt gets" in str(refused), refused
    assert not marker.exists(), marker.read_text()


def test_a_variable_that_steers_the_host_side_of_srt_is_refused(box: Box) -> None:
    """srt (node), bubblewrap and socat run on the host with the environment the launcher starts srt with: the server's.
    NODE_OPTIONS naming a file in a rw mount made srt's node run what the server wrote there, outside any sandbox."""
    hook = box.rw / "hook.js"
    hook.write_text("// the spec's own preload\n")
    shutil.chown(hook, "nobody")
    marker = box.outside / "node-ran-on-the-host"
    spec_file = box.spec("node-options", _mounts(box, f"{{from: {box.rw}, to: {box.rw}, mode: rw}}"))
    text = spec_file.read_text(encoding="utf-8").replace("set: {PYTHONPATH:", f"set: {{NODE_OPTIONS: \"--require {hook}\", PYTHONPATH:", 1)
    spec_file.write_text(text, encoding="utf-8")
    build = build_plan(load(spec_file), "srt")
    refused = [r.message for r in build.results if r.code == "TG004"]
    if refused:
        assert any("NODE_OPTIONS" in message for message in refused), refused
        return
    out = box.sandbox.base / "out-node-options"
    write_build(out, build)
    launcher = out / "probe.sh"
    box.session([("write_path", {"path": str(hook), "data": f"require('fs').writeFileSync({json.dumps(str(marker))}, 'escaped')\n"})],
                launcher=launcher)
    box.session([("environment", {})], launcher=launcher)
    assert not marker.exists()
