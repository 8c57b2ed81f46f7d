"""Run the probe through each server's launcher and judge what it saw.

By default the spec is built for bwrap as `mcpspec build` builds it; with a build directory, the
launchers found there (the ones a user deploys) are first checked byte for byte against their
manifest's digests and a fresh build, and an edited one is refused before anything runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcpspec.ir.plan import Plan
from mcpspec.run.launch import LaunchError, check_server
from mcpspec.settings import Settings
from mcpspec.verify.builddir import BuildDirError, ServerFiles, server_files
from mcpspec.verify.checks import Destination, Judge, Options, Row, request
from mcpspec.verify.launcher import PROBE_INSIDE, LauncherError, ProbeLauncher, probe_launcher, read_config
from mcpspec.verify.prerequisites import host_rows

REPORT_SECONDS = 120.0  # squid's start, a search of the sandbox, forks up to the pids limit
STOP_GRACE_SECONDS = 5.0  # the launcher's own grace between SIGTERM and SIGKILL
# What the runtime binds from the host into every sandbox (its base arguments): not host paths to hide.
# Its tmpfs and /proc, /dev are fresh, so a host path below /tmp must still be absent inside.
BASE_BINDS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
              "/etc/alternatives", "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/localtime", "/etc/passwd", "/etc/group")


class VerifyError(Exception):
    """verify cannot start: the spec does not load or build, a server or launcher is missing (exit status 2)."""


class Listener:
    """A TCP listener on a host loopback address that counts the connections it accepts."""

    def __init__(self, host: str) -> None:
        self.socket = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind((host, 0))
        self.socket.listen(16)
        self.socket.settimeout(0.2)
        self.destination = Destination(host, int(self.socket.getsockname()[1]), "host loopback")
        self.accepted = 0
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while self.running:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.socket.close()


@contextmanager
def listeners() -> Iterator[list[Listener]]:
    opened = []
    for host in ("127.0.0.1", "::1"):
        with contextlib.suppress(OSError):  # a host without IPv6 loopback has one listener
            opened.append(Listener(host))
    try:
        yield opened
    finally:
        for item in opened:
            item.close()


def run_probe(command: Path, checks: dict[str, Any], env: dict[str, str], lifetime: float | None) -> tuple[dict[str, Any] | None, int | None, float, str]:
    """(report, launcher exit status or None if verify had to stop it, seconds from start to end, the launcher's stderr)."""
    started = time.monotonic()
    process = subprocess.Popen([str(command)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    errors: list[bytes] = []
    reader = threading.Thread(target=lambda: errors.append(process.stderr.read() if process.stderr else b""), daemon=True)
    reader.start()
    with contextlib.suppress(BrokenPipeError):
        process.stdin.write(json.dumps(checks).encode())
        process.stdin.close()
    line = b""
    deadline = started + REPORT_SECONDS
    fd = process.stdout.fileno()
    while b"\n" not in line and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        line += chunk
    end = started + (lifetime + STOP_GRACE_SECONDS + 10 if lifetime is not None else REPORT_SECONDS + 10)
    try:
        status: int | None = process.wait(timeout=max(1.0, end - time.monotonic()))
    except subprocess.TimeoutExpired:
        status = None
        process.send_signal(signal.SIGTERM)  # the launcher stops its sandbox and proxy on SIGTERM
        try:
            process.wait(timeout=STOP_GRACE_SECONDS + 5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    elapsed = time.monotonic() - started
    process.stdout.close()
    reader.join(timeout=5)
    stderr = b"".join(errors).decode("utf-8", "replace")
    try:
        report = json.loads(line.split(b"\n", 1)[0]) if b"\n" in line else None
    except ValueError:
        report = None
    return (report if isinstance(report, dict) else None), status, elapsed, stderr


def run_environment(probe: ProbeLauncher, run_id: str) -> dict[str, str]:
    env = dict(os.environ)
    env["MCPSPEC_RUN_ID"] = run_id
    agents = probe.config.get("agents") or []
    if not env.get("MCPSPEC_AGENT") and agents:
        env["MCPSPEC_AGENT"] = str(agents[0])
    return env


def remove_run_dir(config: dict[str, Any], env: dict[str, str]) -> None:
    """Remove the workspace the launcher made for this verification run (a fresh run id: nothing else is in it)."""
    root = config.get("workspace_root")
    if not root or not any(m.get("kind") == "workspace" for m in config.get("mounts", [])):
        return
    parts = [str(root)] + ([env.get("MCPSPEC_AGENT") or str(config.get("default_agent") or "")] if config.get("per_agent") else []) + [env["MCPSPEC_RUN_ID"]]
    run_dir = Path(*parts)
    if run_dir.is_dir() and not run_dir.is_symlink():
        shutil.rmtree(run_dir, ignore_errors=True)


def verify_server(plan: Plan, server: str, files: ServerFiles, spec: Path, options: Options, extra_hidden: Sequence[str] = ()) -> list[Row]:
    """Every row of one server: launch the probe in its sandbox and judge the report."""
    sandbox = plan.servers[server]
    run_id = f"verify-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}"
    try:
        with probe_launcher(files.launcher, f"{server}.py", server, files.squid) as probe, listeners() as opened:
            env = run_environment(probe, run_id)
            targets = [*BASE_BINDS, PROBE_INSIDE]
            req = request(sandbox, spec, options, tuple(item.destination for item in opened), targets, extra_hidden)
            try:
                report, status, elapsed, stderr = run_probe(probe.command, req.checks, env, req.lifetime)
            finally:
                remove_run_dir(probe.config, env)
            accepted = {item.destination.text: item.accepted for item in opened}
    except LauncherError as exc:
        raise VerifyError(str(exc)) from None
    judge = Judge(server, sandbox, req, options, env)
    if report is None:
        said = " ".join(stderr.strip().splitlines()[-3:]) or "nothing on stderr"
        return [Row(server, "launch", "the probe runs in the sandbox and reports", f"no report (launcher status {status}): {said}", "fail")]
    rows = judge.judge(report, accepted)
    judge.lifetime(status if req.lifetime is not None else None, elapsed)
    if req.lifetime is None and status not in (0, None):
        rows.append(Row(server, "launch", "the probe exits 0", f"launcher status {status}: {' '.join(stderr.strip().splitlines()[-2:])}", "fail"))
    return judge.rows


def chosen_servers(plan: Plan, servers: Sequence[str], available: set[str]) -> list[str]:
    for server in servers:
        try:
            check_server(plan, server)
        except LaunchError as exc:
            raise VerifyError(str(exc)) from None
        if server not in available:
            raise VerifyError(f"no bwrap launcher for server {server!r} ({server}.py)")
    chosen = list(servers) or sorted(name for name in available if name in plan.servers and plan.servers[name].runs_here)
    if not chosen:
        raise VerifyError(f"{plan.source.file}: no server has a bwrap launcher to verify")
    return chosen


def verify_file(spec: Path, servers: Sequence[str], options: Options, build_dir: Path | None = None, settings: Settings | None = None) -> list[Row]:
    """Verify ``servers`` (default: every server with a launcher) of ``spec``; VerifyError when it cannot start."""
    from mcpspec.api import build_file
    from mcpspec.report import build_summary

    outcome = build_file(spec, "bwrap", settings, display_name=str(spec))
    if outcome.plan is None:
        raise VerifyError(build_summary.render(outcome).rstrip("\n"))
    plan = outcome.plan
    if outcome.build is None or outcome.stopped:
        raise VerifyError(build_summary.render(outcome).rstrip("\n"))
    fresh = outcome.build
    if build_dir is not None:
        if not build_dir.is_dir():
            raise VerifyError(f"{build_dir}: no such build directory")
        chosen = chosen_servers(plan, servers, {path.stem for path in build_dir.glob("*.py")})
        try:  # every file of every chosen server, before any of them runs
            checked = server_files(build_dir, spec, fresh, chosen)
        except BuildDirError as exc:
            raise VerifyError(str(exc)) from None
        return _verify_all(plan, chosen, checked, spec, options, build_dir, [str(build_dir.resolve())])
    chosen = chosen_servers(plan, servers, {name[:-3] for name in fresh.files if name.endswith(".py")})
    files = {server: ServerFiles(fresh.files[f"{server}.py"], fresh.files.get(f"{server}.squid.conf")) for server in chosen}
    return _verify_all(plan, chosen, files, spec, options, None, [])


def _verify_all(plan: Plan, chosen: Sequence[str], files: dict[str, ServerFiles], spec: Path, options: Options,
                build_dir: Path | None, extra_hidden: Sequence[str]) -> list[Row]:
    """The host's missing prerequisites of every chosen server first, all of them; then the servers whose host is ready."""
    try:
        configs = {server: read_config(files[server].launcher, f"{server}.py") for server in chosen}
    except LauncherError as exc:
        raise VerifyError(str(exc)) from None
    rows: list[Row] = []
    ready = []
    for server in chosen:
        missing = host_rows(server, configs[server], spec, build_dir)
        rows += missing
        if not missing:
            ready.append(server)
    for server in ready:
        rows += verify_server(plan, server, files[server], spec, options, extra_hidden)
    return rows
