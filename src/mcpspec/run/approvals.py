"""Approvals for `mcpspec run`: which calls a person approves, and asking them.

The approver is a command (``--approver CMD`` or ``approver`` in the project
config, split by :func:`mcpspec.config.split_approver`): it reads one JSON object on stdin and exits 0 to allow; any other exit,
or no answer within the timeout, denies. Without one, the controlling terminal
is asked when it can be opened; otherwise every call that needs approval is
denied. The approver gets no secret: not on its command line, not in its
environment (a minimal one), and arguments only when the spec's ``approvals.show_arguments``
is true: exactly as the server will get them, but the spec's own secret values, each replaced by
``[masked: secret NAME]`` and listed in ``masked`` (:mod:`mcpspec.run.approver_view`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.facts import ApprovalMode
from mcpspec.run.approver_view import SecretMarks, Unshowable, visible_json

APPROVAL_TIMEOUT = 120.0  # seconds an approver (a person at a prompt, or a command) has to answer
TTY_CHARS = 1 << 16  # arguments longer than this are not asked about at a terminal (nobody reads them there): denied
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What a desktop approver needs to show a dialog, and nothing that holds a credential.
PASSED_ENV = ("HOME", "LANG", "LC_ALL", "TERM", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS")
UNLISTED_MODE: ApprovalMode = "always"  # a tool the spec does not list, where unlisted tools are allowed
Approver = Literal["command", "tty", "session", "none"]


def approval_mode(plan: Plan, server: str, tool: str) -> ApprovalMode | None:
    """Whether (and how often) a call of ``server``'s ``tool`` needs approval; None for a tool the
    spec does not list (the relay refuses it, or asks ``UNLISTED_MODE`` where unlisted tools are allowed)."""
    sandbox = plan.servers.get(server)
    if sandbox is None or tool not in sandbox.tools:
        return None
    return facts.approval_mode(plan, sandbox.tools[tool])


def tool_effects(plan: Plan, server: str, tool: str) -> tuple[str, ...]:
    """The effects the spec declares for the tool (empty for an unlisted one)."""
    sandbox = plan.servers.get(server)
    if sandbox is None or tool not in sandbox.tools:
        return ()
    return tuple(sandbox.tools[tool].effects)


@dataclass(frozen=True)
class ApprovalRequest:
    server: str
    tool: str
    effects: tuple[str, ...]
    agent: str
    run_id: str
    arguments: Mapping[str, Any] | None
    mode: ApprovalMode
    condition: str | None = None  # the argument rule that sent the call here (its label, never a value)


@dataclass(frozen=True)
class ApprovalDecision:
    allowed: bool
    approver: Approver
    reason: str


class Approvals:
    """Decides calls that need approval, one question at a time, remembering per-session approvals."""

    def __init__(
        self, command: Sequence[str] | None, timeout: float, secrets: Sequence[tuple[str, str]], show_arguments: bool, tty_path: str = "/dev/tty"
    ) -> None:
        if command is not None and not command:
            raise ValueError("the approver command is empty")
        self.command = list(command) if command is not None else None
        self.timeout = timeout
        self.marks = SecretMarks(secrets)  # (name, value) of each secret the spec gives the server
        self.show_arguments = show_arguments
        self.tty_path = tty_path
        self._approved: dict[tuple[str, str, str | None], Approver] = {}
        self._lock = asyncio.Lock()

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        key = (request.server, request.tool, request.condition)
        if request.mode == "per-session" and key in self._approved:
            return ApprovalDecision(True, "session", f"approved earlier in this run ({self._approved[key]})")
        async with self._lock:  # one question at a time: a person sees one prompt, and a repeat waits for it
            if request.mode == "per-session" and key in self._approved:
                return ApprovalDecision(True, "session", f"approved earlier in this run ({self._approved[key]})")
            try:
                decision = await (self._ask_command(request, self.command) if self.command else self._ask_tty(request))
            except Unshowable as exc:
                decision = ApprovalDecision(False, "command" if self.command else "tty", f"the call cannot be shown to the approver: {exc}: denied")
        if decision.allowed and request.mode == "per-session":
            self._approved[key] = decision.approver
        return decision

    def payload(self, request: ApprovalRequest) -> dict[str, Any]:
        """What the approver is shown: the call as the server gets it (arguments only where the spec
        allows), whole, with the spec's secret values replaced and listed in ``masked``."""
        call: dict[str, Any] = {
            "server": request.server,
            "tool": request.tool,
            "effects": list(request.effects),
            "agent": request.agent,
            "run_id": request.run_id,
            "mode": request.mode,
        }
        if request.condition is not None:
            call["condition"] = request.condition
        if self.show_arguments and request.arguments is not None:
            call["arguments"] = dict(request.arguments)
            call["arguments_chars"] = len(json.dumps(call["arguments"], ensure_ascii=False, separators=(",", ":")))
        shown, masked = self.marks.view(call)
        if masked:
            shown["masked"] = [item.as_json() for item in masked]
        return dict(shown)

    # -- a command
    async def _ask_command(self, request: ApprovalRequest, argv: list[str]) -> ApprovalDecision:
        data = (visible_json(self.payload(request)) + "\n").encode("ascii")
        env = {"PATH": SAFE_PATH} | {
            name: value for name in PASSED_ENV
            if (value := os.environ.get(name)) is not None and not self.marks.view(value)[1]  # never a secret
        }
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=None,
                env=env, start_new_session=True,
            )
        except OSError as exc:
            return ApprovalDecision(False, "command", f"the approver command could not start: {exc.strerror or exc}")
        try:
            status = await asyncio.wait_for(self._feed(process, data), self.timeout)
        except TimeoutError:
            return ApprovalDecision(False, "command", f"the approver did not answer within {self.timeout:g}s")
        finally:
            await _stop(process)
        if status == 0:
            return ApprovalDecision(True, "command", "allowed by the approver command")
        how = f"signal {-status}" if status < 0 else f"status {status}"
        return ApprovalDecision(False, "command", f"denied by the approver command (exit {how})")

    @staticmethod
    async def _feed(process: asyncio.subprocess.Process, data: bytes) -> int:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # an approver need not read it all
            process.stdin.write(data)
            await process.stdin.drain()
        process.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await process.stdin.wait_closed()
        return await process.wait()

    # -- the terminal
    async def _ask_tty(self, request: ApprovalRequest) -> ApprovalDecision:
        try:
            fd = os.open(self.tty_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return ApprovalDecision(False, "none", "no approver command and no terminal to ask: denied")
        try:
            if not os.isatty(fd):
                return ApprovalDecision(False, "none", f"{self.tty_path} is not a terminal: denied")
            prompt = self.prompt(request)
            if prompt is None:
                return ApprovalDecision(False, "tty", f"the arguments are longer than {TTY_CHARS} characters, too long to read at a terminal: denied (use an approver command)")
            with contextlib.suppress(termios.error):
                termios.tcflush(fd, termios.TCIFLUSH)  # a key typed before the question is not its answer
            await _write_tty(fd, prompt)
            try:
                answer = await asyncio.wait_for(_read_line(fd), self.timeout)
            except TimeoutError:
                await _write_tty(fd, "\nno answer: denied\n")
                return ApprovalDecision(False, "tty", f"no answer at the terminal within {self.timeout:g}s")
            allowed = answer.strip().lower() in ("y", "yes")
            await _write_tty(fd, "allowed\n" if allowed else "denied\n")
            return ApprovalDecision(allowed, "tty", "allowed at the terminal" if allowed else "denied at the terminal")
        finally:
            os.close(fd)

    def prompt(self, request: ApprovalRequest) -> str | None:
        """The question, every value as printable-ASCII JSON (nothing the call sent can move the cursor,
        reorder text or pass for another character); None when the arguments are too long to read here."""
        shown = self.payload(request)
        lines = [f"mcpspec: approve a call of {visible_json(shown['tool'])} on {visible_json(shown['server'])}?"]
        for name in ("effects", "agent", "run_id", "mode", "condition"):
            if name in shown:
                lines.append(f"  {name}: {visible_json(shown[name])}")
        if "arguments" in shown:
            text = visible_json(shown["arguments"])
            if len(text) > TTY_CHARS:
                return None
            lines.append(f"  arguments ({shown['arguments_chars']} characters, all shown): {text}")
        for item in shown.get("masked", []):
            where = "".join(f"[{visible_json(step)}]" for step in item["path"])
            lines.append(f"  masked: secret {item['secret']} at character {item['at']} of {'the key ' if item.get('in') == 'key' else ''}{where}")
        lines.append("Allow? [y/N] ")
        return "\n".join(lines)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill the approver and everything it started (its own session), then reap it."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


async def _ready(fd: int, write: bool) -> None:
    """Wait until the non-blocking ``fd`` can be written (or read)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    (loop.add_writer if write else loop.add_reader)(fd, wake)
    try:
        await ready
    finally:
        (loop.remove_writer if write else loop.remove_reader)(fd)


async def _write_tty(fd: int, text: str) -> None:
    data = text.encode("ascii", "replace")
    while data:
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            await _ready(fd, write=True)


async def _read_line(fd: int) -> str:
    """One line typed at the terminal (its end counts as an empty answer). A terminal a client holds
    in raw mode sends Enter as a carriage return: that ends the line too."""
    buffer = b""
    while not any(end in buffer for end in b"\r\n") and len(buffer) < 4096:
        try:
            chunk = os.read(fd, 1024)
        except BlockingIOError:
            await _ready(fd, write=False)
            continue
        except OSError:  # the terminal hung up
            break
        if not chunk:
            break
        buffer += chunk
    return buffer.replace(b"\r", b"\n").split(b"\n", 1)[0].decode("utf-8", "replace")
