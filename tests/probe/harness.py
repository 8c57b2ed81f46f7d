"""Run the probe server through a generated launcher and call its tools with the MCP SDK's stdio client."""

from __future__ import annotations

import asyncio
import http.server
import importlib.metadata
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcpspec.api import load
from mcpspec.targets.build import build_plan
from mcpspec.targets.writer import write_build

PROBE = Path(__file__).with_name("probe_server.py")
SANDBOX_PYTHON = "/usr/bin/python3"


def _requirement_names(dist: importlib.metadata.Distribution, extras: frozenset[str] = frozenset()) -> list[str]:
    """The names ``dist`` requires, with the extras it is asked for (``pyjwt[crypto]`` brings cryptography)."""
    names = []
    for requirement in dist.requires or []:
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        if extra and extra.group(1) not in extras:
            continue
        match = re.match(r"[A-Za-z0-9_.-]+(\[[^\]]*\])?", requirement)
        if match:
            names.append(match.group(0))
    return names


def copy_mcp_closure(target: Path) -> None:
    """Copy the `mcp` package and everything it needs (not extras) into ``target``.

    The sandbox runs Debian's /usr/bin/python3 and sees only what is bound in, so
    the SDK is copied to a directory the sandbox uid can read.
    """
    seen: set[str] = set()
    todo = ["mcp"]
    while todo:
        name, _, wanted = todo.pop().partition("[")
        extras = frozenset(e.strip() for e in wanted.rstrip("]").split(",") if e.strip())
        key = name.lower().replace("_", "-") + str(sorted(extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file)))
            if ".." in file.parts or not source.is_file() or "__pycache__" in file.parts:
                continue
            destination = target / file
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
        todo.extend(_requirement_names(dist, extras))


class Sandbox:
    """A directory tree the sandbox uid can traverse: the SDK copy, the probe, workspaces, outputs."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="mcpspec-e2e-", dir="/tmp"))
        self.base.chmod(0o755)
        # An argument of every probe server: finds the sandbox's processes on the host, names no host path.
        self.marker = f"marker-{self.base.name}"
        self.site = self.base / "site"
        copy_mcp_closure(self.site)
        self.probe_dir = self.base / "probe"
        self.probe_dir.mkdir()
        shutil.copy2(PROBE, self.probe_dir / "probe_server.py")
        shutil.copy2(PROBE.with_name("raw_server.py"), self.probe_dir / "raw_server.py")
        shutil.copy2(PROBE.with_name("syscall_probe.py"), self.probe_dir / "syscall_probe.py")
        shutil.copy2(PROBE.with_name("asking_server.py"), self.probe_dir / "asking_server.py")
        shutil.copy2(PROBE.with_name("shifting_server.py"), self.probe_dir / "shifting_server.py")
        shutil.copy2(PROBE.with_name("handshake_only_server.py"), self.probe_dir / "handshake_only_server.py")
        shutil.copy2(PROBE.with_name("rawio.py"), self.probe_dir / "rawio.py")
        shutil.copy2(PROBE.with_name("resource_server.py"), self.probe_dir / "resource_server.py")
        for path in (self.site, self.probe_dir):
            for item in [path, *path.rglob("*")]:
                item.chmod(0o755 if item.is_dir() else 0o644)

    def spec(self, name: str, server_yaml: str, extra: str = "", dirs: str = "") -> Path:
        """A spec with one server `probe` that runs the probe server; ``server_yaml`` adds keys to it."""
        text = f"""version: 1
project: e2e
workspace:
  root: {self.base}/ws-{name}
  dirs:
    input: {{mode: ro}}
    output: {{mode: rw}}
    tmp: {{mode: rw, tmpfs: true, size: 16Mi}}
{dirs}
agents:
  tester: {{servers: [probe]}}
{extra}
servers:
  probe:
    command: [{SANDBOX_PYTHON}, /probe/probe_server.py, {self.marker}]
    mounts:
      - {{from: {self.site}, to: /opt/site}}
      - {{from: {self.probe_dir}, to: /probe}}
      - {{from: workspace.input, to: /workspace/input}}
      - {{from: workspace.output, to: /workspace/output}}
      - {{from: workspace.tmp, to: /workspace/tmp}}
{server_yaml}
    tools:
      read_path: {{effects: [reads_private]}}
"""
        path = self.base / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    def build(self, spec: Path, accept: tuple[str, ...] = ()) -> Path:
        """Build the bwrap launcher; ``accept`` names the high-severity rules an attack spec breaks on purpose."""
        out = self.base / f"out-{spec.stem}"
        build = build_plan(load(spec), "bwrap", fail_on="critical" if accept else "high")
        failing = [r for r in build.findings if r.suppression is None and r.severity in ("critical", "high", "error")]
        assert {r.code for r in failing} == set(accept), [f"{r.code} {r.message}" for r in failing]
        write_build(out, build)
        return out / "probe.py"

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.close()


def call_tools(launcher: Path, calls: list[tuple[str, dict[str, Any]]], env: dict[str, str], timeout: float = 90) -> list[Any]:
    """Start the launcher as a stdio MCP server, call each tool, disconnect; return the decoded results."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def run() -> list[Any]:
        params = StdioServerParameters(command=str(launcher), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env})
        results = []
        with open(log, "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for name, arguments in calls:
                    reply = await session.call_tool(name, arguments)
                    text = reply.content[0].text if reply.content else "{}"  # type: ignore[union-attr]
                    results.append(json.loads(text))
        return results

    log = launcher.parent / "launcher-stderr.log"
    try:
        return asyncio.run(asyncio.wait_for(run(), timeout))
    except BaseException as exc:
        said = log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.exists() else ""
        raise AssertionError(f"the session through {launcher.name} failed; the launcher said:\n{said}") from exc


def root_sandbox() -> Sandbox:
    """A Sandbox for attacks on launchers run as root (as MCP clients on servers run them); skips or fails otherwise."""
    import pytest

    from conftest import require_tool

    for tool in ("bwrap", "socat", "squid"):
        require_tool(tool)
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("the launcher's attacks are run as root, as MCP clients on servers run launchers (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("the launcher's attacks are run as root")
    if not sandbox_python_matches():
        pytest.fail("/usr/bin/python3 must be the same minor version as the test interpreter (the probe server runs on it)")
    return Sandbox()


def sandbox_python_matches() -> bool:
    """Compiled SDK dependencies need the sandbox's python to be the same minor version."""
    if not Path(SANDBOX_PYTHON).exists():
        return False
    version = os.popen(f"{SANDBOX_PYTHON} -c 'import sys; print(sys.version_info[:2])'").read().strip()
    return version == str(tuple(sys.version_info[:2]))


class Listener:
    """An HTTP server on a loopback address that answers 200 'reached'."""

    def __init__(self, host: str, port: int = 0) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"reached")

            def log_message(self, *args: object) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        self.server = Server((host, port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def leftovers(marker: str) -> list[str]:
    """Host processes whose command line mentions ``marker`` (the test's own directory or server)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{entry}: {cmdline[:200]}")
    return found


def wait_gone(marker: str, seconds: float = 5.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = leftovers(marker)
        if not left:
            return []
        time.sleep(0.1)
    return leftovers(marker)
