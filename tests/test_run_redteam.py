"""`mcpspec run` attacked as a hostile client and a hostile server (real relay, real sandbox).

Each test is one attack that once got through; the misbehaving server is tests/probe/raw_server.py,
which logs every message it receives, so a test proves what never arrived.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.types import Tool

from mcpspec.run.lockfile import Lock, lock_path, write_lock
from test_run_relay_real import RUN, Await, box, raw_session, received, workspace, write_spec

__all__ = ["box"]  # the sandbox fixture, shared with the relay's own end-to-end tests
RAW_TOOLS = ("echo", "listish", "asker", "batch", "late", "big", "smuggle", "announce", "stall")  # as raw_server.py lists them


def pin(spec: Path, *names: str) -> None:
    """Lock ``names`` as the raw server offers them at start (``ghost`` as if it had been offered once)."""
    tools = [Tool.model_validate({"name": name, "description": f"the {name} tool", "inputSchema": {"type": "object"}}) for name in names]
    hello = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}  # as raw_server.py answers
    write_lock(lock_path(spec), Lock().with_server("probe", tools, hello))


def approver(spec: Path, seconds: float) -> str:
    path = spec.with_name("approve.sh")
    path.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {seconds}\nexit 0\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def call(request_id: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def cancel(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


def calls_seen(box: Any, name: str) -> list[tuple[str, Any]]:
    seen = [json.loads(line) for line in received(box, name, "r1", "received.log") if line.strip()]
    return [(m["params"]["name"], m["params"].get("arguments")) for m in seen if isinstance(m, dict) and m.get("method") == "tools/call"]


def test_a_pinned_tool_the_server_no_longer_offers_is_refused(box: Any) -> None:
    """The server leaves a pinned tool out of its listing (its metadata can no longer be checked) yet answers it."""
    spec = write_spec(box, "ghost", "      echo: {effects: []}\n      ghost: {effects: []}", script="raw_server.py")
    pin(spec, "echo", "ghost")
    replies, status, stderr = raw_session(spec, "r1", [call(1, "ghost"), call(2, "echo", text="fine")])
    assert replies[1]["result"]["isError"] is True and "refused by policy" in replies[1]["result"]["content"][0]["text"], stderr
    assert replies[2]["result"].get("isError") is not True
    assert calls_seen(box, "ghost") == [("echo", {"text": "fine"})]
    assert status == 0, stderr  # not offered is not a changed pin


def test_a_tool_changed_while_its_call_awaits_approval_is_refused(box: Any) -> None:
    """list_changed (and a changed description) lands between the pin check and the approver's answer."""
    spec = write_spec(box, "toctou", "      echo: {effects: [], approval: always}\n      announce: {effects: []}", script="raw_server.py")
    pin(spec, *RAW_TOOLS)
    messages = [call(1, "echo", text="after the change"), 0.8, call(2, "announce")]
    replies, status, stderr = raw_session(spec, "r1", messages, "--approver", approver(spec, 2.5), wait=20)
    assert "changed" in replies[2]["result"]["content"][0]["text"]
    assert replies[1]["result"]["isError"] is True and "mcp-sandbox.lock" in replies[1]["result"]["content"][0]["text"], stderr
    assert calls_seen(box, "toctou") == [("announce", {})]
    assert status == 3, stderr


def test_a_later_page_alone_does_not_renew_the_verdicts_after_list_changed(box: Any) -> None:
    """After list_changed, a client lists only a later page (which leaves out the changed tool): the stale
    verdict of that tool must not let its call through."""
    spec = write_spec(box, "page2", "      echo: {effects: []}\n      announce: {effects: []}", script="raw_server.py")
    pin(spec, *RAW_TOOLS)
    page2 = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "p2"}}
    # Each waits for the answer before: a pause would not do, mcpspec run may start after all is sent.
    replies, status, stderr = raw_session(spec, "r1", [call(1, "announce"), Await(1), page2, Await(2), call(3, "echo", text="via a stale verdict")], wait=20)
    assert "changed" in replies[1]["result"]["content"][0]["text"], stderr
    assert "echo" not in [tool["name"] for tool in replies[2]["result"]["tools"]]
    assert replies[3]["result"].get("isError") is True and "mcp-sandbox.lock" in replies[3]["result"]["content"][0]["text"], (replies, stderr)
    assert calls_seen(box, "page2") == [("announce", {})]
    assert status == 3, stderr


def mode(box: Any, name: str, *modes: str) -> Path:
    """Put raw_server.py in ``modes`` (files in the run's input directory); return that directory."""
    directory = workspace(box, name, "r1") / "input"
    directory.mkdir(parents=True)
    for each in modes:
        (directory / each).touch()
    return directory


def test_a_listing_answered_just_before_list_changed_does_not_renew_the_verdicts(box: Any) -> None:
    """The relay's own listing and list_changed arrive in one read: the listing, read first, is older than
    the change and must not become the verdicts once the change has been read."""
    spec = write_spec(box, "rug", "      echo: {effects: []}", script="raw_server.py")
    pin(spec, *RAW_TOOLS)
    mode(box, "rug", "rug")
    replies, status, stderr = raw_session(spec, "r1", [call(1, "echo", text="on a verdict older than the change")], wait=20)
    assert replies[1]["result"].get("isError") is True and "mcp-sandbox.lock" in replies[1]["result"]["content"][0]["text"], (replies, stderr)
    assert calls_seen(box, "rug") == []
    assert status == 3, stderr


def test_a_call_judged_before_list_changed_is_judged_again_if_sent_after(box: Any) -> None:
    """A call judged while another's large write fills the server's input waits for the pipe; list_changed
    is read meanwhile (the server stops reading until the relay has read it): the call is judged again."""
    spec = write_spec(box, "choke", "      echo: {effects: []}\n      late: {effects: []}", script="raw_server.py")
    pin(spec, *RAW_TOOLS)
    inputs = mode(box, "choke", "choke")
    big = call(1, "late", seconds=0, pad="x" * (3 << 20))  # more than the pipe and the relay's buffers hold
    past = b" " * (1 << 20)  # a blank line: once it is written, the relay has read (and judged) both calls
    messages = [big, call(2, "echo", text="judged before the change"), past, lambda: (inputs / "go").touch()]
    replies, status, stderr = raw_session(spec, "r1", messages, wait=30)
    assert replies[1]["result"]["content"][0]["text"] == "late", stderr
    assert replies[2]["result"].get("isError") is True and "mcp-sandbox.lock" in replies[2]["result"]["content"][0]["text"], (replies[2], stderr)
    assert [name for name, _ in calls_seen(box, "choke")] == ["late"]
    assert status == 3, stderr


def test_a_resource_read_judged_before_list_changed_is_judged_again_if_sent_after(box: Any) -> None:
    """As above for resources/read: judged (notes://all shown clean) while a large call fills the server's
    input; the server then poisons notes://all and says so; the read, sent after, is judged again: refused."""
    spec = write_spec(box, "choke-res", "      late: {effects: []}", script="raw_server.py")
    inputs = mode(box, "choke-res", "choke_resources")
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "notes://all"}}
    big = call(1, "late", seconds=0, pad="x" * (3 << 20))
    past = b" " * (1 << 20)
    messages = [{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, Await(9), read, big, past, lambda: (inputs / "go").touch()]
    replies, status, stderr = raw_session(spec, "r1", messages, wait=30)
    assert replies[1]["result"]["content"][0]["text"] == "late", stderr
    assert "refused by policy" in replies[2]["error"]["message"] and "notes://all" in replies[2]["error"]["message"], (replies[2], stderr)
    seen = [json.loads(line) for line in received(box, "choke-res", "r1", "received.log") if line.strip()]
    assert not [m for m in seen if isinstance(m, dict) and m.get("method") == "resources/read"]
    assert status == 3, stderr


def test_a_cancelled_call_whose_id_is_reused_can_still_be_cancelled(box: Any) -> None:
    """Cancel a call while it awaits approval, reuse its id at once, cancel again: neither reaches the server."""
    spec = write_spec(box, "reuse", "      echo: {effects: [], approval: always}\n      late: {effects: []}", script="raw_server.py")
    messages = [call(1, "echo", text="first"), 2.5, cancel(1), call(1, "echo", text="second"), 0.3, cancel(1), 4.0, call(2, "late", seconds=0)]
    replies, status, stderr = raw_session(spec, "r1", messages, "--approver", approver(spec, 3.0), wait=12)
    assert "late" in replies[2]["result"]["content"][0]["text"], stderr
    assert calls_seen(box, "reuse") == [("late", {"seconds": 0})]
    assert not [r for r in replies["others"] if r.get("id") == 1]
    assert status == 0, stderr


def test_a_large_result_that_stalls_mid_line_still_times_out(box: Any) -> None:
    """Past the parse cap the result is streamed; a server that stops mid-line must not outlive call_timeout."""
    spec = write_spec(box, "stall", "      stall: {effects: [], limits: {call_timeout: 2s}}", script="raw_server.py")
    started = time.monotonic()
    replies, status, stderr = raw_session(spec, "r1", [call(1, "stall")], wait=12)
    assert 1 in replies, f"no answer to the stalled call; mcpspec run said:\n{stderr[-2000:]}"
    assert time.monotonic() - started < 12
    assert replies[1]["result"]["isError"] is True and "call_timeout" in replies[1]["result"]["content"][0]["text"]
    assert [r["cut"] for r in replies["others"] if "cut" in r]  # the streamed line was cut, never ended as JSON
    seen = [json.loads(line) for line in received(box, "stall", "r1", "received.log") if line.strip()]
    assert any(m.get("method") == "notifications/cancelled" for m in seen if isinstance(m, dict))
    assert status == 0, stderr


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        try:
            children = Path(f"/proc/{todo.pop()}/task").glob("*/children")
            kids = {int(child) for path in children for child in path.read_text(encoding="ascii").split()}
        except OSError:
            continue
        todo += sorted(kids - found)
        found |= kids
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_mcpspec_run_stops_the_launcher_and_its_sandbox(box: Any, sig: signal.Signals) -> None:
    """A server that outlives the end of its input must not outlive `mcpspec run` either."""
    name = f"kill-{sig.name.lower()}"
    spec = write_spec(box, name, "      linger: {effects: []}", script="raw_server.py")
    process = subprocess.Popen([*RUN, str(spec), "probe", "--run-id", "r1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    process.stdin.write((json.dumps(hello) + "\n" + json.dumps(call(1, "linger")) + "\n").encode())
    process.stdin.flush()
    process.stdout.readline()
    assert b"lingering" in process.stdout.readline()
    tree = descendants(process.pid)
    assert tree, "mcpspec run has no launcher"
    try:
        process.send_signal(sig)
        process.wait(30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(alive(pid) for pid in tree):
            time.sleep(0.2)
        assert not [pid for pid in tree if alive(pid)], "the launcher or its sandbox outlived mcpspec run"
    finally:
        for pid in tree:
            if alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def test_the_servers_stderr_cannot_leak_its_secret_forge_or_break_audit_lines(box: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the default audit sink (stderr) the server's own stderr shares the stream: it is masked, kept
    apart from the audit lines and never parses as one, and holds no terminal control character."""
    spec = write_spec(box, "noisy", "      noisy: {effects: []}", server="    secrets: [{use: token, as: {env: PROBE_TOKEN}}]", script="raw_server.py")
    spec.write_text(spec.read_text(encoding="utf-8") + "secrets:\n  token: {provider: env, ref: RUN_NOISY_TOKEN}\n", encoding="utf-8")
    monkeypatch.setenv("RUN_NOISY_TOKEN", "tok-noisy-8c41d2e9f7")
    replies, status, stderr = raw_session(spec, "r1", [call(1, "noisy"), 1.0, call(2, "noisy")])
    assert "noisy" in replies[2]["result"]["content"][0]["text"] and status == 0, stderr
    assert "tok-noisy-8c41d2e9f7" not in stderr
    assert "PARTIAL" in stderr and "\x1b" not in stderr
    events = []
    for line in stderr.splitlines():
        if line.startswith("{"):
            record = json.loads(line)  # every line that looks like an audit line is one whole JSON object
            assert "forged" not in record, line
            events.append(record["event"])
    assert events.count("call") == 2 and "session_end" in events


def test_ids_that_look_alike_get_their_own_replies_and_odd_ids_never_run(box: Any) -> None:
    spec = write_spec(box, "ids", "      late: {effects: []}\n      echo: {effects: []}", script="raw_server.py")
    odd = [json.dumps(call(request_id, "echo", text=f"odd-{n}")).encode() for n, request_id in enumerate((1.0, 2**53, None, True, [1]))]
    messages = [call(1, "late", seconds=1), call("1", "echo", text="string one"), call(-1, "echo", text="minus one"), *odd]
    replies, status, stderr = raw_session(spec, "r1", messages, wait=20)
    assert replies[1]["result"]["content"][0]["text"] == "late", stderr
    assert "string one" in replies["1"]["result"]["content"][0]["text"]
    assert "minus one" in replies[-1]["result"]["content"][0]["text"]
    assert len([r for r in replies["others"] if r.get("id") is None and "error" in r]) == 5
    assert not [args for _, args in calls_seen(box, "ids") if "odd" in json.dumps(args)]
    assert status == 0


def test_calls_held_for_approval_are_bounded(box: Any) -> None:
    """A client cannot pile up calls awaiting approval (each up to 4 MiB) until the relay's memory runs out."""
    spec = write_spec(box, "pile", "      echo: {effects: [], approval: always}", script="raw_server.py")
    arguments = "p" * (3 * 1024 * 1024)
    messages: list[Any] = [json.dumps(call(n, "echo", text=arguments)).encode() for n in range(1, 41)]
    messages += [2.0, {"jsonrpc": "2.0", "id": "sync", "method": "ping"}]
    replies, status, stderr = raw_session(spec, "r1", messages, "--approver", approver(spec, 30), wait=20)
    refused = [r for r in replies["others"] if "result" in r and "too many" in r["result"]["content"][0]["text"]]
    assert replies["sync"]["result"] == {} and len(refused) >= 40 - 6, stderr  # at most 16 MiB held
    assert not calls_seen(box, "pile") and status == 0


def test_a_call_awaiting_approval_never_runs_once_the_client_has_gone(box: Any) -> None:
    spec = write_spec(box, "gone", "      echo: {effects: [], approval: always}", script="raw_server.py")
    process = subprocess.Popen(
        [*RUN, str(spec), "probe", "--run-id", "r1", "--approver", approver(spec, 2)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    process.stdin.write((json.dumps(hello) + "\n" + json.dumps(call(1, "echo", text="after the client left")) + "\n").encode())
    process.stdin.close()
    assert process.wait(40) == 0
    assert not calls_seen(box, "gone")


def test_malformed_notifications_and_stream_heads_do_not_end_the_session(box: Any) -> None:
    """Client notifications with params that are not an object, and a server's oversized reply whose id is
    not JSON (01), are refused or dropped; the session goes on."""
    spec = write_spec(box, "crash", "      echo: {effects: []}\n      bad_head: {effects: [], limits: {call_timeout: 2s}}", script="raw_server.py")
    messages = [
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": [1, 2]},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "everything"},
        call(1, "bad_head"),
        call(2, "echo", text="still here"),
    ]
    replies, status, stderr = raw_session(spec, "r1", messages, wait=20)
    assert "still here" in replies[2]["result"]["content"][0]["text"], stderr
    assert replies[1]["result"]["isError"] is True
    assert "Traceback" not in stderr and status == 0, stderr


def test_mcpspec_runs_own_messages_mask_what_the_server_named(box: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new tool is reported on stderr by name: a server that names a tool after its secret must not get it printed."""
    server = "    unlisted_tools: allow\n    env: {set: {PYTHONPATH: /opt/site, PROBE_LEAK: '1'}}\n    secrets: [{use: token, as: {env: PROBE_TOKEN}}]"
    spec = write_spec(box, "named", "      echo: {effects: []}", server=server, script="raw_server.py")
    text = spec.read_text(encoding="utf-8").replace("    env: {set: {PYTHONPATH: /opt/site}}\n", "", 1)
    spec.write_text(text + "secrets:\n  token: {provider: env, ref: RUN_NAMED_TOKEN}\n", encoding="utf-8")
    monkeypatch.setenv("RUN_NAMED_TOKEN", "tok-named-5d7c0e1a93")
    pin(spec, *RAW_TOOLS)
    replies, status, stderr = raw_session(spec, "r1", [call(1, "echo", text="x")], "--approver", "/bin/true")
    assert "x" in replies[1]["result"]["content"][0]["text"], stderr
    assert "refused tool 'leak-" in stderr and status == 3, stderr
    assert "tok-named-5d7c0e1a93" not in stderr


def test_call_timeout_answers_even_when_the_server_stops_reading(box: Any) -> None:
    """A server that stops reading its input blocks the relay's writes to it: the client still gets its timeout answer
    at the call_timeout, long before the server reads again. (Until this session the test timed the whole session,
    the deaf call's own 12 s included, and was marked as an open bug; the relay had answered at 2 s all along.)"""
    spec = write_spec(box, "deaf", "      deaf: {effects: []}\n      echo: {effects: [], limits: {call_timeout: 2s}}", script="raw_server.py")
    filler = "f" * (3 * 1024 * 1024 + 512 * 1024)  # more than the pipes and the launcher hold
    deaf_for = 10.0
    started = time.monotonic()
    answered: list[float] = []
    messages = [call(1, "deaf", seconds=deaf_for), 0.5, call(2, "echo", text=filler), Await(2), lambda: answered.append(time.monotonic())]
    replies, _status, stderr = raw_session(spec, "r1", messages, wait=30)
    assert replies[2]["result"]["isError"] is True and "call_timeout" in replies[2]["result"]["content"][0]["text"], stderr
    took = answered[0] - started
    assert took < deaf_for - 3, f"the timeout answer took {took:.1f}s, as long as the server did not read; {stderr[-1500:]}"
    assert replies[1]["result"]["content"][0]["text"] == "deaf", "the deaf call itself is answered once the server reads again"
