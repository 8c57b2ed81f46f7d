"""Approvals of `mcpspec run`: which calls need one (the same answer lint gives), real approver
commands (allow, deny, a timeout, what they read on stdin and in their environment), a real
pseudo-terminal for the prompt, per-session memory, and denial where nobody can be asked."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
import tty
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpspec import api
from mcpspec.config import ConfigError, load_config, split_approver
from mcpspec.rules import facts
from mcpspec.run.approvals import ApprovalDecision, ApprovalRequest, Approvals, approval_mode, tool_effects

SPEC = """\
version: 1
project: approvals
servers:
  ops:
    command: [ops-mcp]
    tools:
      status: {effects: [reads_private]}
      deploy: {effects: [deploy]}
      scale: {effects: [deploy], approval: per-session}
      wipe: {effects: [destructive], approval: never}
      peek: {effects: [reads_private], approval: always}
approvals:
  require: [deploy, destructive]
"""
SECRET = "s3cr3t-value-of-the-ops-token"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


def request(tool: str = "deploy", mode: str = "always", arguments: dict[str, object] | None = None) -> ApprovalRequest:
    return ApprovalRequest("ops", tool, ("deploy",), "claude", "run-1", arguments, mode)  # type: ignore[arg-type]


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    """A small approver program (Python: the approver's PATH is the minimal safe one)."""
    path = tmp_path / name
    path.write_text(body)
    return [sys.executable, str(path)]


def decide(approvals: Approvals, *requests: ApprovalRequest) -> list[ApprovalDecision]:
    async def all_of() -> list[ApprovalDecision]:
        return [await approvals.decide(item) for item in requests]

    return asyncio.run(all_of())


# ---------------------------------------------------------------- which calls


def test_approval_mode_is_the_tools_own_setting_else_the_required_effects_and_lint_agrees() -> None:
    plan = api.load_text(SPEC)
    expected = {"status": None, "deploy": "always", "scale": "per-session", "wipe": None, "peek": "always"}
    assert {name: approval_mode(plan, "ops", name) for name in expected} == expected
    for name, tool in plan.servers["ops"].tools.items():
        assert facts.approval_gated(plan, tool) == (expected[name] is not None)
    assert approval_mode(plan, "ops", "unlisted") is None
    assert approval_mode(plan, "nosuch", "deploy") is None
    assert tool_effects(plan, "ops", "deploy") == ("deploy",)
    assert tool_effects(plan, "ops", "unlisted") == ()


# ---------------------------------------------------------------- an approver command


def test_an_approver_that_exits_0_allows_and_one_that_exits_1_denies(tmp_path: Path) -> None:
    allow = Approvals(script(tmp_path, "allow.py", "import sys; sys.stdin.read(); sys.exit(0)\n"), 10, [], True)
    deny = Approvals(script(tmp_path, "deny.py", "import sys; sys.exit(1)\n"), 10, [], True)
    assert decide(allow, request()) == [ApprovalDecision(True, "command", "allowed by the approver command")]
    [denied] = decide(deny, request())
    assert (denied.allowed, denied.approver) == (False, "command") and "exit status 1" in denied.reason


def test_the_approver_reads_one_masked_json_object_and_gets_no_secret_in_argv_or_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPS_TOKEN", SECRET)
    monkeypatch.setenv("DISPLAY", ":0")  # a desktop approver's dialog needs it
    monkeypatch.setenv("TERM", SECRET)  # a passed variable that holds the secret is not passed
    seen = tmp_path / "seen.json"
    argv = script(tmp_path, "record.py", f"""\
import json, os, sys
data = sys.stdin.read()
json.dump({{"stdin": data, "env": dict(os.environ), "argv": sys.argv}}, open({str(seen)!r}, "w"))
""")
    arguments = {"target": "prod", "note": f"use {SECRET} or {TOKEN}", SECRET: [1, {"k": TOKEN}]}
    [decision] = decide(Approvals(argv, 10, [("ops_token", SECRET)], True), request(arguments=arguments))
    assert decision.allowed
    record = json.loads(seen.read_text())
    assert record["stdin"].endswith("\n") and record["stdin"].count("\n") == 1
    shown = json.loads(record["stdin"])
    masked = "[masked: secret ops_token]"
    assert shown == {
        "server": "ops", "tool": "deploy", "effects": ["deploy"], "agent": "claude", "run_id": "run-1", "mode": "always",
        "arguments": {"target": "prod", "note": f"use {masked} or {TOKEN}", masked: [1, {"k": TOKEN}]},  # not a spec secret: shown as sent
        "arguments_chars": len(json.dumps(arguments, separators=(",", ":"))),
        "masked": [{"path": ["arguments", "note"], "at": 4, "secret": "ops_token"}, {"path": ["arguments", masked], "at": 0, "secret": "ops_token", "in": "key"}],
    }
    everything = seen.read_text()
    assert SECRET not in everything
    assert "OPS_TOKEN" not in record["env"] and "TERM" not in record["env"] and record["env"]["DISPLAY"] == ":0"
    assert set(record["env"]) <= {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR",
                                  "DBUS_SESSION_BUS_ADDRESS", "LC_CTYPE"}  # LC_CTYPE: set by Python's UTF-8 coercion
    assert record["argv"] == argv[1:]


def test_without_show_arguments_the_approver_never_sees_the_arguments(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    argv = script(tmp_path, "record.py", f"import sys; open({str(seen)!r}, 'w').write(sys.stdin.read())\n")
    decide(Approvals(argv, 10, [], False), request(arguments={"target": "prod"}))
    assert "arguments" not in json.loads(seen.read_text()) and "prod" not in seen.read_text()


def test_an_approver_past_the_timeout_is_killed_with_its_children_and_the_call_denied(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = script(tmp_path, "slow.py", f"""\
import os, subprocess, time
child = subprocess.Popen(["sleep", "60"])
open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(60)
""")
    started = time.monotonic()
    [decision] = decide(Approvals(argv, 1.0, [], True), request())
    assert time.monotonic() - started < 10
    assert (decision.allowed, decision.approver) == (False, "command") and "within 1s" in decision.reason
    for pid in pids.read_text().split():
        assert _gone(int(pid)), f"approver process {pid} survived its timeout"


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):  # killed; a zombie waits only for a reaper
            return True
        time.sleep(0.05)
    return False


def test_an_approver_that_cannot_start_denies(tmp_path: Path) -> None:
    [decision] = decide(Approvals([str(tmp_path / "missing")], 5, [], True), request())
    assert (decision.allowed, decision.approver) == (False, "command") and "could not start" in decision.reason


def test_per_session_approvals_are_remembered_always_asks_every_call_denials_are_not_remembered(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    # Denies its first question, allows every later one.
    argv = script(tmp_path, "count.py", f"""\
import sys
with open({str(calls)!r}, "a") as log:
    log.write(sys.stdin.read())
sys.exit(1 if open({str(calls)!r}).read().count("\\n") == 1 else 0)
""")
    approvals = Approvals(argv, 10, [], True)
    decisions = decide(approvals, *[request("scale", "per-session")] * 3, *[request("deploy", "always")] * 2)
    assert [(d.allowed, d.approver) for d in decisions] == [
        (False, "command"), (True, "command"), (True, "session"), (True, "command"), (True, "command"),
    ]
    asked = [json.loads(line)["tool"] for line in calls.read_text().splitlines()]
    assert asked == ["scale", "scale", "deploy", "deploy"]


def test_concurrent_per_session_calls_ask_once(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    argv = script(tmp_path, "slow_allow.py", f"import sys, time; open({str(calls)!r}, 'a').write('x'); time.sleep(0.3)\n")
    approvals = Approvals(argv, 10, [], True)

    async def together() -> list[ApprovalDecision]:
        return list(await asyncio.gather(*(approvals.decide(request("scale", "per-session")) for _ in range(4))))

    decisions = asyncio.run(together())
    assert all(d.allowed for d in decisions) and calls.read_text() == "x"


# ---------------------------------------------------------------- the terminal


@contextlib.contextmanager
def _pty() -> Iterator[tuple[int, str]]:
    """A pseudo-terminal: its master (the person's side) and the path the prompt opens, as it opens /dev/tty.
    The slave stays open here too, as a session's shell keeps its terminal open."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    try:
        yield master, os.ttyname(slave)
    finally:
        os.close(master)
        os.close(slave)


async def _read_until(master: int, marker: bytes, seconds: float = 10) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while marker not in seen and time.monotonic() < deadline:
        try:
            seen += os.read(master, 4096)
        except BlockingIOError:
            await asyncio.sleep(0.01)
    return seen


def _at_the_terminal(approvals: Approvals, item: ApprovalRequest, master: int, answer: bytes | None) -> tuple[ApprovalDecision, bytes]:
    async def both() -> tuple[ApprovalDecision, bytes]:
        asked = asyncio.create_task(approvals.decide(item))
        prompt = await _read_until(master, b"[y/N] ")
        if answer is not None:
            os.write(master, answer)
        decision = await asked
        return decision, prompt + await _read_until(master, b"\n", 0.5)

    return asyncio.run(both())


def test_the_terminal_prompt_shows_the_call_masked_and_escaped_and_y_allows() -> None:
    with _pty() as (master, path):
        approvals = Approvals(None, 10, [("ops_token", SECRET)], True, tty_path=path)
        arguments = {"note": f"{SECRET} {TOKEN} \x1b[2J\x1b[Hfake prompt"}
        decision, shown = _at_the_terminal(approvals, request(arguments=arguments), master, b"y\n")
    assert decision == ApprovalDecision(True, "tty", "allowed at the terminal")
    text = shown.decode("ascii")
    assert '"deploy"' in text and '"ops"' in text and '"claude"' in text and "run-1" in text
    assert SECRET not in text and TOKEN in text and "[masked: secret ops_token]" in text and "masked: secret ops_token at character 0" in text
    assert "\x1b" not in text and "\\u001b[2J" in text  # an escape in the arguments cannot redraw the screen


def test_a_terminal_in_raw_mode_answers_with_a_carriage_return() -> None:
    with _pty() as (master, path):
        slave = os.open(path, os.O_RDWR | os.O_NOCTTY)
        try:
            tty.setraw(slave)  # as a full-screen client leaves its terminal
            decision, _ = _at_the_terminal(Approvals(None, 10, [], False, tty_path=path), request(), master, b"y\r")
        finally:
            os.close(slave)
    assert decision == ApprovalDecision(True, "tty", "allowed at the terminal")


@pytest.mark.parametrize("answer", [b"n\n", b"\n", b"yes please\n"])
def test_anything_but_y_at_the_terminal_denies(answer: bytes) -> None:
    with _pty() as (master, path):
        decision, _ = _at_the_terminal(Approvals(None, 10, [], False, tty_path=path), request(), master, answer)
    assert decision == ApprovalDecision(False, "tty", "denied at the terminal")


def test_a_key_typed_before_the_question_is_not_its_answer_and_silence_denies() -> None:
    with _pty() as (master, path):
        os.write(master, b"y\n")
        decision, shown = _at_the_terminal(Approvals(None, 1.0, [], False, tty_path=path), request(), master, None)
    assert (decision.allowed, decision.approver) == (False, "tty") and "within 1s" in decision.reason
    assert b"Allow? [y/N] " in shown


def test_per_session_memory_holds_for_terminal_approvals_too() -> None:
    with _pty() as (master, path):
        approvals = Approvals(None, 10, [], False, tty_path=path)
        first, _ = _at_the_terminal(approvals, request("scale", "per-session"), master, b"y\n")
        [second] = decide(approvals, request("scale", "per-session"))
    assert first.approver == "tty" and second == ApprovalDecision(True, "session", "approved earlier in this run (tty)")


def test_without_an_approver_or_a_terminal_every_call_is_denied(tmp_path: Path) -> None:
    [none] = decide(Approvals(None, 5, [], True, tty_path=str(tmp_path / "no-tty")), request("scale", "per-session"))
    assert none == ApprovalDecision(False, "none", "no approver command and no terminal to ask: denied")
    plain = tmp_path / "plain"
    plain.write_text("")
    [not_tty] = decide(Approvals(None, 5, [], True, tty_path=str(plain)), request())
    assert (not_tty.allowed, not_tty.approver) == (False, "none")


# ---------------------------------------------------------------- the project config


def test_the_project_config_names_an_approver_split_as_a_shell_would(tmp_path: Path) -> None:
    config = tmp_path / ".mcpspec.yaml"
    config.write_text("approver: \"notify-approve --title 'mcp call'\"\napprover-timeout: 30\n")
    loaded = load_config(config)
    assert loaded.approver == ["notify-approve", "--title", "mcp call"] and loaded.approver_timeout == 30
    config.write_text("approver: \"unterminated 'quote\"\n")
    with pytest.raises(ConfigError, match="approver"):
        load_config(config)
    with pytest.raises(ConfigError, match="empty"):
        split_approver("   ")


def test_arguments_too_long_to_read_at_a_terminal_are_denied_not_cut() -> None:
    with _pty() as (master, path):
        approvals = Approvals(None, 10, [], True, tty_path=path)
        [decision] = decide(approvals, request(arguments={"blob": "x" * 70_000}))
        assert not decision.allowed and "too long to read at a terminal" in decision.reason
        with contextlib.suppress(BlockingIOError):
            assert b"[y/N]" not in os.read(master, 4096)  # never asked about what it could not show


def test_two_keys_that_read_the_same_once_masked_are_denied(tmp_path: Path) -> None:
    argv = script(tmp_path, "allow.py", "import sys; sys.stdin.read(); sys.exit(0)\n")
    arguments = {f"k{SECRET}": 1, "k[masked: secret ops_token]": 2}
    [decision] = decide(Approvals(argv, 10, [("ops_token", SECRET)], True), request(arguments=arguments))
    assert not decision.allowed and "cannot be shown" in decision.reason


def test_a_secret_read_from_a_file_is_masked_without_its_newline_and_restored_exactly() -> None:
    from mcpspec.run.approver_view import SecretMarks, restored

    arguments = {"auth": "Bearer file-secret-0042", "both": "file-secret-0042\n"}
    view, masked = SecretMarks([("key", "file-secret-0042\n")]).view(arguments)
    assert view == {"auth": "Bearer [masked: secret key]", "both": "[masked: secret key]"}  # the longest spelling wins
    assert [item.as_json() for item in masked] == [{"path": ["auth"], "at": 7, "secret": "key", "trimmed": True}, {"path": ["both"], "at": 0, "secret": "key"}]
    assert restored(view, [item.as_json() for item in masked], {"key": "file-secret-0042\n"}) == arguments
