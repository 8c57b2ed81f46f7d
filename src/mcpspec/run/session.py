"""`mcpspec run FILE SERVER`: start one server through its bwrap launcher and relay MCP to it; `mcpspec run
FILE --agent A`: every server of agent A so, behind one endpoint (run/endpoint.py).

Exit status: 0 the client ended the session; 1 the server could not be started (the spec does not
build, the lock or the audit sink cannot be read); 2 usage (an unknown server, agent or run id); 3 the session refused a tool that is new
or changed versus mcp-sandbox.lock, or has a tool-poisoning finding (reported even when everything else went well); 4 the server
ended before the client did; 128+N stopped by signal N (SIGTERM, SIGHUP, SIGINT), the sandbox with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.poisoning.screening import Guard
from mcpspec.run import argrules, watchdog
from mcpspec.run.approvals import UNLISTED_MODE, ApprovalRequest, Approvals, approval_mode, tool_effects
from mcpspec.run.audit import AuditError, AuditLog, Masker, secret_values
from mcpspec.run.chain import Chain, ChainKeyError
from mcpspec.run.chainkey import chain_key
from mcpspec.run.endpoint import Endpoint, Member
from mcpspec.run.launch import LaunchError, NotAServer, PreparedLauncher, RemotePlan, prepared_agent, prepared_server
from mcpspec.run.limits import CallLimiter
from mcpspec.run.listen import ListenError, LocalEndpoint, loopback
from mcpspec.run.lockfile import Lock, LockError, load_lock, lock_path
from mcpspec.run.otel import OtelURLError, SpanExporter, SpanTap, traces_endpoint
from mcpspec.run.policy import ToolPolicy
from mcpspec.run.relay import Audit, Gate, Relay, Verdict
from mcpspec.run.remote_side import RemoteSide, remote_side
from mcpspec.run.stderr import clean, pass_stderr
from mcpspec.settings import Settings
from mcpspec.targets.bwrap.runtime import RUN_ID

EXIT_ENDED, EXIT_NOT_STARTED, EXIT_USAGE, EXIT_PINS, EXIT_SERVER_ENDED = 0, 1, 2, 3, 4
APPROVER_TIMEOUT = 120.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
STOP_GRACE = 10.0  # seconds the launcher has to tear the sandbox down after the client has gone


@dataclass(frozen=True)
class RunOptions:
    agent: str | None = None
    run_id: str | None = None
    approver: Sequence[str] | None = None  # None: the config's, else a terminal prompt, else deny
    otel: str | None = None  # an OTLP/HTTP collector's URL: a span per call
    audit_key_env: str | None = None  # the environment variable holding the audit chain's HMAC key
    audit_key_file: str | None = None  # or the file holding it
    listen: str | None = None  # serve the client on this loopback address:port (streamable HTTP) instead of stdio
    token_file: Path | None = None  # where --listen's token is written (0600); None: stderr, once


class _NoAudit:
    def write(self, event: str, **fields: Any) -> None:
        pass


# The audit fields of a call line that each `logging.record` entry stands for; a call line
# keeps only the fields of the entries the spec records (event, time, server, duration always).
RECORDED_BY: dict[str, tuple[str, ...]] = {
    "tool": ("tool", "effects"),
    "caller": ("agent", "run_id"),
    "decision": ("decision", "approver", "reason", "condition"),
    "exit_status": ("status", "result_bytes"),
    "arguments_hash": ("arguments_sha256",),
}


def recorded_call_fields(fields: Mapping[str, Any], record: Sequence[str]) -> dict[str, Any]:
    """``fields`` of one call line without those the spec's ``logging.record`` leaves out."""
    dropped = {name for entry, names in RECORDED_BY.items() if entry not in record for name in names}
    return {name: value for name, value in fields.items() if name not in dropped}


class _Context:
    """Adds who and what to every audit line; call lines keep only what ``logging.record`` asks for."""

    def __init__(self, log: Audit, context: Mapping[str, Any], record: Sequence[str]) -> None:
        self.log = log
        self.context = dict(context)
        self.record = tuple(record)

    def write(self, event: str, **fields: Any) -> None:
        line = {**self.context, **fields}
        self.log.write(event, **(recorded_call_fields(line, self.record) if event == "call" else line))


def run_session(spec: str | os.PathLike[str], server: str, options: RunOptions, settings: Settings) -> int:
    """Run one session; messages for the user go to stderr (stdout is the protocol)."""

    def serve(key: bytes | None, listen: tuple[str, int] | None, spec_sha256: str, lock: Lock | None) -> int:
        with prepared_server(spec, server, settings) as launcher:
            sandbox = launcher.plan.servers[server]
            wrong = _agent_problem(sandbox, options.agent)
            if wrong:
                _say(f"{server}: {wrong}")
                return EXIT_USAGE
            if lock is None and sandbox.tools:
                _say(f"{server}: no {lock_path(spec).name} next to the spec: the tools are not pinned (run `mcpspec lock {spec}`)")
            approver = options.approver if options.approver is not None else settings.config.approver
            timeout = settings.config.approver_timeout or APPROVER_TIMEOUT
            return asyncio.run(_serve(launcher, lock, options, approver, timeout, Chain(spec_sha256, key), listen))

    return _guarded(spec, options, serve)


def _guarded(spec: str | os.PathLike[str], options: RunOptions, serve: Callable[[bytes | None, tuple[str, int] | None, str, Lock | None], int]) -> int:
    """``serve`` with the options checked and the lock read; its failures as exit statuses, said on stderr."""
    checked = _checked(spec, options)
    if checked is None:
        return EXIT_USAGE
    try:
        return serve(*checked, _lock(spec))
    except NotAServer as exc:
        _say(str(exc))
        return EXIT_USAGE
    except (LaunchError, LockError, AuditError) as exc:
        _say(str(exc))
        return EXIT_NOT_STARTED


def _checked(spec: str | os.PathLike[str], options: RunOptions) -> tuple[bytes | None, tuple[str, int] | None, str] | None:
    """The options' audit key and listen address, and the spec's digest; None (said) when an option is wrong."""
    if options.run_id is not None and not RUN_ID.fullmatch(options.run_id):
        _say(f"--run-id {options.run_id!r} must match {RUN_ID.pattern}")
        return None
    try:
        if options.otel is not None:
            traces_endpoint(options.otel)
        key = chain_key(options.audit_key_env, options.audit_key_file)
        if options.token_file is not None and options.listen is None:
            raise ListenError("--token-file is the token of --listen: give --listen too")
        listen = loopback(options.listen) if options.listen is not None else None
    except (OtelURLError, ChainKeyError, ListenError) as exc:
        _say(str(exc))
        return None
    try:
        spec_sha256 = hashlib.sha256(Path(spec).read_bytes()).hexdigest()
    except OSError:
        spec_sha256 = ""  # the build names the problem with the file
    return key, listen, spec_sha256


def _say(text: str) -> None:
    sys.stderr.write(f"mcpspec run: {text}\n")
    sys.stderr.flush()


def _lock(spec: str | os.PathLike[str]) -> Lock | None:
    path = lock_path(spec)
    return load_lock(path) if path.exists() else None


def _agent_problem(sandbox: EffectiveSandbox, chosen: str | None) -> str | None:
    """Why ``--agent`` (or its absence) cannot start this server, as the launcher would refuse it; None when it can."""
    agent = _agent(sandbox, chosen)
    if not sandbox.agents or agent in sandbox.agents:
        return None
    served = ", ".join(sandbox.agents)
    return f"no agent named {agent!r} uses this server (it serves: {served})" if agent else f"the server serves agents {served}: choose one with --agent"


def _agent(sandbox: EffectiveSandbox, chosen: str | None) -> str:
    if chosen:
        return chosen
    return sandbox.agents[0] if len(sandbox.agents) == 1 else ("default" if not sandbox.agents else "")


def _gate(plan: Plan, sandbox: EffectiveSandbox, approvals: Approvals, agent: str, run_id: str) -> Gate:
    async def gate(tool: str, arguments: Mapping[str, Any] | None) -> Verdict | None:
        mode = approval_mode(plan, sandbox.name, tool) if tool in sandbox.tools else UNLISTED_MODE
        found = argrules.ruling(sandbox, tool, arguments)
        if found is not None and found.action != "approve":
            return Verdict(found.action == "allow", "policy", argrules.reason(found), found.label)
        if found is not None:
            mode = "always"
        if mode is None:
            return None
        effects = tool_effects(plan, sandbox.name, tool)
        rule = argrules.shown(sandbox, tool, found) if found is not None else None
        decision = await approvals.decide(ApprovalRequest(sandbox.name, tool, effects, agent, run_id, arguments, mode, rule))
        return Verdict(decision.allowed, decision.approver, decision.reason, found.label if found is not None else None)

    return gate


async def _client_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**16)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", buffering=0, closefd=False))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", buffering=0, closefd=False))
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


class _LauncherSide:
    """The server side of a sandboxed server: its launcher's pipes (stderr passed on, masked)."""

    def __init__(self, process: asyncio.subprocess.Process, masker: Masker, name: str) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self.server_in, self.server_out = process.stdin, process.stdout
        self.stderr = asyncio.create_task(pass_stderr(process.stderr, name, masker))
        self.watch = watchdog.start(process.pid)  # stops the launcher should mcpspec run die (SIGKILL included)
        self.described: dict[str, Any] = {}

    def interrupt(self) -> None:  # the launcher tears the sandbox down; the relay then ends with it
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)

    async def stop(self, client_ended: bool) -> int | None:
        status = await _stop(self.process, client_ended)
        with contextlib.suppress(TimeoutError):  # the launcher's last words (its launch audit line)
            await asyncio.wait_for(self.stderr, 5.0)
        if self.watch is not None:  # the launcher has ended: the watchdog ends with its pipe
            os.close(self.watch[1])
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.watch[0].wait(5)
        return status


@dataclass
class _Server:
    """One server of a session: its audit, policy and launcher (or remote) side; its relay once started."""

    launcher: PreparedLauncher | RemotePlan
    sandbox: EffectiveSandbox
    agent: str
    masker: Masker
    secrets: list[tuple[str, str]]
    log: AuditLog | None
    audit: Audit
    context: Audit
    spans: SpanExporter | None
    approvals: Approvals
    env: dict[str, str]
    policy: ToolPolicy
    gate: Gate
    side: _LauncherSide | RemoteSide | None = None
    relay: Relay | None = None


def _prepared(launcher: PreparedLauncher | RemotePlan, lock: Lock | None, options: RunOptions, approver: Sequence[str] | None, approver_timeout: float, chain: Chain, run_id: str) -> _Server:
    """A server's audit, approvals and policy, set up before anything starts (AuditError when its sink cannot be opened)."""
    plan, sandbox = launcher.plan, launcher.plan.servers[launcher.server]
    agent = _agent(sandbox, options.agent)
    secrets = secret_values(sandbox)  # read once, as the launcher reads them; they stay in this process
    masker = Masker([value for _, value in secrets], shapes=sandbox.logging.redact)
    log = AuditLog(sandbox.logging.sink, masker, chain=chain) if sandbox.logging.audit else None
    audit: Audit = _Context(log if log is not None else _NoAudit(), {"server": sandbox.name, "agent": agent, "run_id": run_id}, sandbox.logging.record)
    spans = SpanExporter(options.otel, {"mcpspec.server": sandbox.name, "mcpspec.agent": agent, "mcpspec.run_id": run_id}, masker) if options.otel else None
    context = audit
    if spans is not None:
        audit = SpanTap(audit, spans)
    approvals = Approvals(approver, approver_timeout, secrets, plan.approvals.show_arguments)
    env = {**os.environ, "MCPSPEC_RUN_ID": run_id, **({"MCPSPEC_AGENT": agent} if agent else {})}
    if options.audit_key_env is not None:
        env.pop(options.audit_key_env, None)  # the key stays in this process
    policy = ToolPolicy(sandbox, lock, poison=Guard.of(plan, sandbox.name, lock, agent or None))
    gate = _gate(plan, sandbox, approvals, agent, run_id)
    return _Server(launcher, sandbox, agent, masker, list(secrets), log, audit, context, spans, approvals, env, policy, gate)


async def _started(server: _Server, lock: Lock | None, approver: Sequence[str] | None, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> Relay:
    """Start the server's launcher (or connect its remote side) and give it a relay to ``client_in``/``client_out``."""
    launcher, sandbox, masker = server.launcher, server.sandbox, server.masker
    side: _LauncherSide | RemoteSide
    if isinstance(launcher, RemotePlan):
        side = await remote_side(sandbox, server.secrets, server.audit, functools.partial(clean, masker=masker))
    else:
        process = await asyncio.create_subprocess_exec(
            str(launcher.command), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=server.env, limit=2**16
        )  # fmt: skip
        side = _LauncherSide(process, masker, sandbox.name)
    server.side = side
    server.audit.write(
        "session_start",
        **side.described,
        spec=str(Path(launcher.plan.file).name),
        lock="present" if lock is not None else "absent",
        unlisted_tools=sandbox.unlisted_tools,
        approver=list(approver) if approver else "the terminal, else deny",
    )
    relay = Relay(server.policy, CallLimiter(sandbox), server.audit, server.gate, client_in, client_out, side.server_in, side.server_out, functools.partial(clean, masker=masker))
    server.relay = relay
    return relay


async def _finished(server: _Server, code: int, started: float) -> int | None:
    """Stop the server's side and close its audit; the launcher's status."""
    relay, side = server.relay, server.side
    status = await side.stop(relay is not None and relay.client_ended) if side is not None else None
    if server.spans is not None:
        server.spans.close()
        server.context.write("otel_export", **server.spans.summary())
    poisoned = {"refused_poisoned": sorted(server.policy.refused_poisoned)} if server.policy.refused_poisoned else {}
    refused_pins = sorted(server.policy.refused_pins)
    server.audit.write("session_end", status=code, server_status=status, duration_s=round(time.monotonic() - started, 3), refused_pins=refused_pins, **poisoned)
    log = server.log
    if log is not None:
        log.close()
        if log.chain is not None and log.chain.seq:  # kept elsewhere, it shows a cut tail (docs/run.md)
            _say(f"{server.sandbox.name}: audit chain {log.chain.chain} ended at seq {log.chain.seq - 1} with hash {log.chain.last}")
    return status


def _code(server: _Server, stopped_by: Sequence[int]) -> int:
    """The exit status one server's session ends with."""
    if stopped_by:
        return 128 + stopped_by[0]
    if server.policy.refused_pins or server.policy.refused_poisoned:
        return EXIT_PINS
    return EXIT_SERVER_ENDED if server.relay is not None and not server.relay.client_ended else EXIT_ENDED


def _say_refused(server: _Server) -> None:
    policy = server.policy
    if policy.refused_pins:
        names = clean(", ".join(sorted(policy.refused_pins)), server.masker)  # the server named them
        _say(f"{server.sandbox.name}: refused what is new or changed versus the lock: {names} (exit status {EXIT_PINS})")
    elif policy.refused_poisoned:
        names = clean(", ".join(sorted(policy.refused_poisoned)), server.masker)
        _say(f"{server.sandbox.name}: refused what has tool-poisoning findings: {names} (exit status {EXIT_PINS})")


def _closed(endpoint: LocalEndpoint | None, client_out: asyncio.StreamWriter) -> None:
    if endpoint is not None:
        endpoint.close()
    with contextlib.suppress(Exception):
        client_out.close()


def _run_id(options: RunOptions) -> str:
    return options.run_id or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}"


async def _open_client(options: RunOptions, listen: tuple[str, int] | None) -> tuple[LocalEndpoint | None, asyncio.StreamReader, asyncio.StreamWriter]:
    endpoint = LocalEndpoint(*listen) if listen is not None else None
    try:
        client_in, client_out = await (endpoint.open() if endpoint is not None else _client_streams())
    except (ValueError, OSError) as exc:
        what = f"cannot listen on {options.listen}" if endpoint is not None else "stdin and stdout must be pipes, sockets or a terminal (an MCP client's)"
        raise LaunchError(f"{what}: {exc}") from None
    if endpoint is not None:
        _announce(endpoint, options.token_file)
    return endpoint, client_in, client_out


async def _serve(
    launcher: PreparedLauncher | RemotePlan,
    lock: Lock | None,
    options: RunOptions,
    approver: Sequence[str] | None,
    approver_timeout: float,
    chain: Chain,
    listen: tuple[str, int] | None = None,
) -> int:
    server = _prepared(launcher, lock, options, approver, approver_timeout, chain, _run_id(options))
    sandbox, policy = server.sandbox, server.policy
    endpoint, client_in, client_out = await _open_client(options, listen)
    started = time.monotonic()
    relay = await _started(server, lock, approver, client_in, client_out)
    side = server.side
    assert side is not None
    stopped_by: list[int] = []

    def stop(signum: int) -> None:
        stopped_by.append(signum)
        side.interrupt()

    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    status: int | None = None
    try:
        await relay.run()
    finally:
        code = _code(server, stopped_by)
        status = await _finished(server, code, started)
        _closed(endpoint, client_out)
    if stopped_by:
        _say(f"{sandbox.name}: stopped by signal {signal.Signals(stopped_by[0]).name}; the sandbox was stopped with it")
    elif policy.refused_pins or policy.refused_poisoned:
        _say_refused(server)
    elif not relay.client_ended:
        _say(f"{sandbox.name}: the server ended before the client did (launcher status {status})")
    return code


def _announce(endpoint: LocalEndpoint, token_file: Path | None) -> None:
    """Say where the endpoint listens, and give its token once: to ``token_file`` (mode 0600) or stderr."""
    if token_file is None:
        _say(f"listening on {endpoint.url}; send Authorization: Bearer {endpoint.token}")
        return
    try:
        token_file.unlink(missing_ok=True)
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(endpoint.token + "\n")
    except OSError as exc:
        endpoint.close()
        raise LaunchError(f"cannot write the token to {token_file}: {exc.strerror}") from None
    _say(f"listening on {endpoint.url}; its token is in {token_file}")


async def _stop(process: asyncio.subprocess.Process, client_ended: bool) -> int | None:
    """Let the launcher end on its own (it tears the sandbox down), then ask it, then make it."""
    for sent, wait in ((None, STOP_GRACE if client_ended else 2.0), (signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 5.0)):
        if sent is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sent)
        try:
            return await asyncio.wait_for(process.wait(), wait)
        except TimeoutError:
            continue
    return process.returncode


def run_agent_session(spec: str | os.PathLike[str], options: RunOptions, settings: Settings) -> int:
    """`mcpspec run FILE --agent NAME`: every server of the agent, each in its own sandbox behind its own
    relay, served to the client as one MCP server (run/endpoint.py). The endpoint starts only when every
    one of them can: one that cannot be built or whose audit cannot be opened stops it (exit status 1)."""
    agent = options.agent
    assert agent is not None

    def serve(key: bytes | None, listen: tuple[str, int] | None, spec_sha256: str, lock: Lock | None) -> int:
        with prepared_agent(spec, agent, settings) as launchers:
            unpinned = [item.server for item in launchers if item.plan.servers[item.server].tools]
            if lock is None and unpinned:
                _say(f"{', '.join(unpinned)}: no {lock_path(spec).name} next to the spec: the tools are not pinned (run `mcpspec lock {spec}`)")
            approver = options.approver if options.approver is not None else settings.config.approver
            timeout = settings.config.approver_timeout or APPROVER_TIMEOUT
            run_id = _run_id(options)
            servers = [_prepared(item, lock, options, approver, timeout, Chain(spec_sha256, key), run_id) for item in launchers]
            return asyncio.run(_serve_agent(agent, servers, lock, options, approver, listen))

    return _guarded(spec, options, serve)


async def _serve_agent(agent: str, servers: list[_Server], lock: Lock | None, options: RunOptions, approver: Sequence[str] | None, listen: tuple[str, int] | None) -> int:
    endpoint_side, client_in, client_out = await _open_client(options, listen)
    started = time.monotonic()
    members: list[Member] = []
    runs: list[asyncio.Task[None]] = []
    stopped_by: list[int] = []

    def stop(signum: int) -> None:
        stopped_by.append(signum)
        for server in servers:
            if server.side is not None:
                server.side.interrupt()

    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        for server in servers:
            ours, theirs = socket.socketpair()
            relay_in, relay_out = await asyncio.open_connection(sock=theirs, limit=2**16)
            member_in, member_out = await asyncio.open_connection(sock=ours, limit=2**16)
            relay = await _started(server, lock, approver, relay_in, relay_out)
            runs.append(asyncio.create_task(_relayed(relay, relay_out)))
            members.append(Member(server.sandbox.name, member_in, member_out))
        by_name = {server.sandbox.name: server for server in servers}

        def audit(name: str, event: str, fields: Mapping[str, Any]) -> None:
            by_name[name].audit.write(event, **fields)

        await Endpoint(agent, members, client_in, client_out, lambda text: _say(f"agent {agent}: {text}"), audit).run()
    finally:
        for member in members:  # a server that could not start stops the others: their relays see the end of input
            member.writer.close()
        if runs:
            await asyncio.wait(runs)
        codes: list[int] = []
        for server in servers:
            codes.append(_code(server, stopped_by))
            status = await _finished(server, codes[-1], started)
            if codes[-1] == EXIT_SERVER_ENDED:
                _say(f"{server.sandbox.name}: the server ended before the client did (launcher status {status})")
        _closed(endpoint_side, client_out)
    if stopped_by:
        _say(f"agent {agent}: stopped by signal {signal.Signals(stopped_by[0]).name}; the sandboxes were stopped with it")
        return 128 + stopped_by[0]
    for server in servers:
        _say_refused(server)
    return EXIT_PINS if EXIT_PINS in codes else (EXIT_SERVER_ENDED if EXIT_SERVER_ENDED in codes else EXIT_ENDED)


async def _relayed(relay: Relay, client_out: asyncio.StreamWriter) -> None:
    """One server's relay until its client (the endpoint) or its server ends; then the endpoint sees its socket close."""
    try:
        await relay.run()
    except Exception as exc:  # noqa: BLE001 - one server's failure ends that server, not the endpoint
        _say(f"{relay.sandbox.name}: the relay stopped: {exc}")
    finally:
        client_out.close()
