"""A server asks the client for input (roots, elicitation, sampling) by every carrier, through the real relay.

The server is tests/probe/asking_server.py (raw JSON-RPC on stdio, in its bwrap sandbox, started by
`mcpspec run`). Each test runs one carrier and proves both ends: the client never sees the request
(raw lines, and the `mcp` SDK's own Client, whose callbacks would answer with a host path, a typed
token and model output), and the server never gets an answer (its log of every line it received).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from test_run_relay_real import RUN, box, raw_session, received, write_spec

__all__ = ["box"]
ANSWERS = ("/home/victim/projects", "tok-typed-by-the-user", "MODEL-OUTPUT")  # what the client's callbacks would give
TOOLS = "\n".join(f"      {name}: {{effects: []}}" for name in ("in_result", "in_meta", "in_task", "in_notification", "in_batch", "as_request", "in_error", "plain"))


def asking_spec(box: Any, name: str) -> Path:
    audit = box.base / f"audit-{name}.jsonl"
    return write_spec(box, name, TOOLS, server=f"    logging: {{sink: {audit}}}", script="asking_server.py")


def audit_lines(box: Any, name: str) -> list[dict[str, Any]]:
    path = box.base / f"audit-{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def server_got(box: Any, name: str) -> list[Any]:
    return [json.loads(line) for line in received(box, name, "r1", "received.log") if line.strip()]


def assert_no_answer_reached_the_server(box: Any, name: str) -> None:
    for message in server_got(box, name):
        text = json.dumps(message)
        assert "inputResponses" not in text and "requestState" not in text, message
        assert not any(answer in text for answer in ANSWERS), message
        if isinstance(message, dict) and "method" not in message:  # a response to one of the server's requests
            assert "result" not in message, message


def objects(value: Any) -> list[Any]:
    found = [value]
    for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        found += objects(item)
    return found


def assert_nothing_asks_the_client(lines: list[Any]) -> None:
    for line in lines:
        assert not isinstance(line, list), line
        assert not (isinstance(line, dict) and "method" in line and "id" in line), line  # no request from the server
        for item in objects(line):
            if isinstance(item, dict):
                assert not {"inputRequests", "requestState", "elicitations"} & item.keys(), line
                assert item.get("resultType", "complete") == "complete", line
                assert not isinstance(item.get("method"), str), line
    text = json.dumps(lines)
    for asked in ("roots/list", "elicitation/create", "sampling/createMessage", "evil.example", "Paste your token", "say secret"):
        assert asked not in text, text[:2000]


def request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def tool(request_id: int, name: str) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": name, "arguments": {}})


@pytest.mark.parametrize(
    ("carrier", "message"),
    [
        ("resources-read", request(1, "resources/read", {"uri": "file:///notes.txt"})),
        ("prompts-get", request(1, "prompts/get", {"name": "greet"})),
        ("completion", request(1, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "a", "value": "b"}})),
        ("tools-call", tool(1, "in_result")),
        ("in-meta", tool(1, "in_meta")),
        ("in-task", tool(1, "in_task")),
        ("in-error", tool(1, "in_error")),
    ],
)
def test_a_request_for_input_inside_a_result_is_refused(box: Any, carrier: str, message: dict[str, Any]) -> None:
    spec = asking_spec(box, carrier)
    replies, status, stderr = raw_session(spec, "r1", [message, tool(2, "plain")], wait=120)
    assert "error" in replies[1] and "refused by mcpspec run" in replies[1]["error"]["message"], (replies, stderr)
    assert "data" not in replies[1]["error"]
    assert replies[2]["result"]["content"][0]["text"] == "plain"  # the session goes on
    assert_nothing_asks_the_client([replies[1], *replies["others"]])
    assert_no_answer_reached_the_server(box, carrier)
    refused = [line for line in audit_lines(box, carrier) if line["event"] in ("message_refused", "call") and line.get("direction", "server") == "server"]
    assert any(line["event"] == "message_refused" for line in refused), audit_lines(box, carrier)
    assert status == 0, stderr


@pytest.mark.parametrize("carrier", ["in_notification", "in_batch", "as_request"])
def test_a_request_for_input_in_a_notification_a_batch_or_a_request_never_reaches_the_client(box: Any, carrier: str) -> None:
    name = carrier.replace("_", "-")
    spec = asking_spec(box, name)
    replies, status, stderr = raw_session(spec, "r1", [tool(1, carrier), 1.0, tool(2, "plain")], wait=120)
    assert replies[2]["result"]["content"][0]["text"] == "plain", (replies, stderr)
    if carrier == "in_batch":  # its answer came in the dropped batch: the client hears so at once
        assert "answered in a JSON-RPC batch" in replies[1]["error"]["message"], (replies, stderr)
    assert_nothing_asks_the_client([replies.get(1), *replies["others"]])
    assert_no_answer_reached_the_server(box, name)
    assert any(line["event"] == "message_refused" and line.get("direction") == "server" for line in audit_lines(box, name))
    assert status == 0, stderr


def test_answers_to_an_input_request_from_the_client_never_reach_the_server(box: Any) -> None:
    spec = asking_spec(box, "answers")
    answered = request(1, "resources/read", {"uri": "file:///notes.txt", "inputResponses": {"roots": {"roots": [{"uri": "file:///home/victim/projects"}]}}, "requestState": "s1"})
    replies, status, stderr = raw_session(spec, "r1", [answered])
    assert replies[1]["error"]["code"] == -32602, replies
    assert_no_answer_reached_the_server(box, "answers")
    assert status == 0, stderr


def test_the_server_is_never_told_the_client_can_sample_elicit_or_list_roots(box: Any) -> None:
    spec = asking_spec(box, "capabilities")
    hello = request(
        9, "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": True}}, "clientInfo": {"name": "c", "version": "1"}},
    )  # fmt: skip
    _, status, stderr = raw_session(spec, "r1", [hello])
    initialized = [m for m in server_got(box, "capabilities") if isinstance(m, dict) and m.get("method") == "initialize"]
    assert initialized and all(m["params"]["capabilities"] == {} for m in initialized), initialized
    assert status == 0, stderr


def test_the_sdk_client_never_answers_a_request_hidden_in_a_result(box: Any) -> None:
    """The `mcp` SDK's Client drives input_required itself: its callbacks must never be called."""
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError
    from mcp.types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

    spec = asking_spec(box, "sdk")
    asked: list[str] = []

    async def roots(context: Any) -> ListRootsResult:
        asked.append("roots")
        return ListRootsResult(roots=[Root(uri=f"file://{ANSWERS[0]}")])  # type: ignore[arg-type]

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append("elicitation")
        return ElicitResult(action="accept", content={"token": ANSWERS[1]})

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        asked.append("sampling")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=ANSWERS[2]), model="m")

    async def run() -> list[str]:
        params = StdioServerParameters(command=RUN[0], args=[*RUN[1:], str(spec), "probe", "--run-id", "r1"], env=dict(os.environ))
        outcomes: list[str] = []
        async with Client(params, list_roots_callback=roots, elicitation_callback=elicit, sampling_callback=sample) as client:
            for name, attempt in (
                ("read", lambda: client.read_resource("file:///notes.txt")),
                ("prompt", lambda: client.get_prompt("greet")),
                ("call", lambda: client.call_tool("in_result", {})),
                ("meta", lambda: client.call_tool("in_meta", {})),
                ("request", lambda: client.call_tool("as_request", {})),
            ):
                try:
                    await attempt()
                    outcomes.append(f"{name}: answered")
                except MCPError as exc:
                    outcomes.append(f"{name}: {exc}")
            await asyncio.sleep(0.5)
        return outcomes

    outcomes = asyncio.run(asyncio.wait_for(run(), 120))
    assert asked == [], outcomes
    for outcome in outcomes[:4]:
        assert "refused by mcpspec run" in outcome, outcomes
    assert outcomes[4] == "request: answered", outcomes  # the tool's own result passes; its requests do not
    assert_no_answer_reached_the_server(box, "sdk")
