"""The agent endpoint's naming and merging, without processes (tests/test_run_agent_real.py runs it for real)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcpspec.run.endpoint import Endpoint, Member, merged_hello
from mcpspec.run.names import collisions, exposed
from mcpspec.run.revisions import SERVER_INFO_KEY


def test_a_shared_name_is_prefixed_on_every_server_and_the_real_name_kept() -> None:
    shown, left_out = exposed({"a": ["echo", "identity"], "b": ["echo", "pause"]})
    assert shown == {"identity": ("a", "identity"), "pause": ("b", "pause"), "a__echo": ("a", "echo"), "b__echo": ("b", "echo")}
    assert left_out == []
    assert collisions({"a": ["echo"], "b": ["echo"], "c": ["echo", "x"]}) == {"echo": ["a", "b", "c"]}


def test_a_prefixed_name_that_is_another_servers_tool_is_left_out_not_shadowed() -> None:
    """b named a tool a__send: it was shown, and the model called it as a's send (redteam: hijack by the
    endpoint's own naming). Neither is shown now."""
    shown, left_out = exposed({"a": ["send"], "b": ["send", "a__send"]})
    assert "a__send" not in shown and shown["b__send"] == ("b", "send")
    assert left_out == ["a__send"]
    shown, _ = exposed({"b": ["a__send", "send"], "a": ["send"]})  # whichever server comes first
    assert "a__send" not in shown and shown["b__send"] == ("b", "send")


def test_initialize_answers_merge_capabilities_and_name_each_servers_instructions() -> None:
    merged = merged_hello(
        "dev",
        "initialize",
        {
            "a": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "a", "version": "1"}, "instructions": "Use echo."},
            "b": {"protocolVersion": "2025-06-18", "capabilities": {"resources": {"subscribe": True}, "logging": {}}, "serverInfo": {"name": "b", "version": "1"}},
        },
    )
    assert isinstance(merged, dict)
    assert merged["capabilities"] == {"tools": {"listChanged": True}, "resources": {"listChanged": True, "subscribe": True}}
    assert merged["serverInfo"]["name"] == "mcpspec-agent-dev" and merged["instructions"] == "[a] Use echo."


def test_servers_that_settle_different_revisions_are_refused() -> None:
    results = {"a": {"protocolVersion": "2025-06-18", "capabilities": {}}, "b": {"protocolVersion": "2025-11-25", "capabilities": {}}}
    said = merged_hello("dev", "initialize", results)
    assert isinstance(said, str) and "a: 2025-06-18" in said and "b: 2025-11-25" in said


def test_discover_answers_keep_only_the_revisions_every_server_speaks() -> None:
    info = {SERVER_INFO_KEY: {"name": "a", "version": "1"}}
    results = {
        "a": {"supportedVersions": ["2026-07-28", "2025-11-25"], "capabilities": {"tools": {}}, "_meta": info, "resultType": "complete"},
        "b": {"supportedVersions": ["2026-07-28"], "capabilities": {"prompts": {}}, "_meta": info, "resultType": "complete"},
    }
    merged = merged_hello("dev", "server/discover", results)
    assert isinstance(merged, dict) and merged["supportedVersions"] == ["2026-07-28"] and merged["resultType"] == "complete"
    assert merged["_meta"][SERVER_INFO_KEY]["name"] == "mcpspec-agent-dev"
    assert merged_hello("dev", "server/discover", {**results, "c": {"supportedVersions": ["2025-11-25"]}}) == "the agent's servers have no protocol revision in common"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpspec", "run", *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_run_needs_a_server_or_an_agent_and_names_an_unknown_agent(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text("version: 1\nproject: p\nagents:\n  dev: {servers: [a]}\nservers:\n  a:\n    command: [/bin/true]\n    tools: {t: {effects: []}}\n", encoding="utf-8")
    neither = run(str(spec))
    assert neither.returncode == 2 and "--agent NAME" in neither.stderr
    unknown = run(str(spec), "--agent", "ops")
    assert unknown.returncode == 2 and "no agent named 'ops' (the spec has: dev)" in unknown.stderr


def test_a_server_that_cannot_start_stops_the_whole_endpoint_before_any_starts(tmp_path: Path) -> None:
    started = tmp_path / "started"
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(
        f"""version: 1
project: p
agents:
  dev: {{servers: [a, b]}}
servers:
  a:
    command: [/bin/touch, {started}]
    tools: {{t: {{effects: []}}}}
  b:
    command: [/bin/true]
    logging: {{sink: {tmp_path}}}
    tools: {{t: {{effects: []}}}}
""",
        encoding="utf-8",
    )
    failed = run(str(spec), "--agent", "dev")
    assert failed.returncode == 1, failed.stderr
    assert str(tmp_path) in failed.stderr and not started.exists()


class Scripted:
    """A stand-in relay: answers the endpoint's requests from ``answers`` (method -> result, or a list
    of pages), and records what it was sent."""

    def __init__(self, name: str, answers: dict[str, Any]) -> None:
        self.name = name
        self.answers = answers
        self.received: list[dict[str, Any]] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            message = json.loads(line)
            self.received.append(message)
            if "id" not in message:
                continue
            answer = self.answers.get(message["method"])
            if isinstance(answer, list):  # pages: the cursor is the page's index
                index = int((message.get("params") or {}).get("cursor", 0))
                answer = {**answer[index], **({"nextCursor": str(index + 1)} if index + 1 < len(answer) else {})}
            reply = {"result": answer} if answer is not None else {"error": {"code": -32601, "message": "no"}}
            writer.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}).encode() + b"\n")
            await writer.drain()
            if message["method"] == "prompts/get" and self.name == "b":
                writer.close()  # b ends right after its first prompts/get
                return


async def endpoint_session(relays: list[Scripted], requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    members, serving = [], []
    for relay in relays:
        ours, theirs = socket.socketpair()
        member_in, member_out = await asyncio.open_connection(sock=ours)
        relay_in, relay_out = await asyncio.open_connection(sock=theirs)
        serving.append(asyncio.create_task(relay.serve(relay_in, relay_out)))
        members.append(Member(relay.name, member_in, member_out))
    client, ours = socket.socketpair()
    endpoint_in, endpoint_out = await asyncio.open_connection(sock=ours)
    client_in, client_out = await asyncio.open_connection(sock=client)
    running = asyncio.create_task(Endpoint("dev", members, endpoint_in, endpoint_out, lambda _: None).run())
    seen: list[dict[str, Any]] = []
    for message in requests:
        client_out.write(json.dumps(message).encode() + b"\n")
        await client_out.drain()
        while True:  # every request here is answered before the next is sent
            got = json.loads(await asyncio.wait_for(client_in.readline(), 5))
            seen.append(got)
            if got.get("id") == message.get("id"):
                break
    client_out.write_eof()
    await asyncio.wait_for(running, 5)
    for task in serving:
        task.cancel()
    return seen


def test_prompts_and_resources_are_merged_routed_by_owner_and_leave_with_their_server() -> None:
    a = Scripted("a", {
        "prompts/list": [{"prompts": [{"name": "summary"}]}, {"prompts": [{"name": "plan"}]}],
        "resources/list": {"resources": [{"uri": "file:///a.txt", "name": "a"}, {"uri": "file:///shared", "name": "a"}]},
        "prompts/get": {"messages": []}, "resources/read": {"contents": [{"uri": "file:///shared", "text": "from a"}]},
    })  # fmt: skip
    b = Scripted("b", {"prompts/list": {"prompts": [{"name": "summary"}]}, "resources/list": {"resources": [{"uri": "file:///shared", "name": "b"}]}, "prompts/get": {"messages": []}})
    request = lambda i, method, **params: {"jsonrpc": "2.0", "id": i, "method": method, "params": params}  # noqa: E731
    seen = asyncio.run(endpoint_session([a, b], [
        request(1, "prompts/list"), request(2, "prompts/list", cursor="1"), request(3, "resources/list"),
        request(4, "resources/read", uri="file:///shared"), request(5, "prompts/get", name="b__summary"),
        request(6, "prompts/get", name="plan"), request(7, "prompts/get", name="b__summary"),
    ]))  # fmt: skip
    by_id = {message.get("id"): message for message in seen}
    assert sorted(p["name"] for p in by_id[1]["result"]["prompts"]) == ["a__summary", "b__summary", "plan"]  # both of a's pages
    assert "nextCursor" not in by_id[1]["result"] and by_id[2]["error"]["code"] == -32602  # one page: a cursor is refused
    assert [r["uri"] for r in by_id[3]["result"]["resources"]] == ["file:///a.txt"]  # the URI both list is nobody's: left out
    assert "several servers" in by_id[4]["error"]["message"]  # and its read refused, whichever server listed it first
    assert "result" in by_id[5] and [m["params"]["name"] for m in b.received if m.get("method") == "prompts/get"] == ["summary"]
    assert [m["params"]["name"] for m in a.received if m.get("method") == "prompts/get"] == ["plan"]  # the prefix never reaches a server
    assert {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"} in seen  # b ended: its prompts left
    assert "b" in by_id[7]["error"]["message"] and "ended" in by_id[7]["error"]["message"]
    assert not [m for m in [*a.received, *b.received] if m.get("method") == "resources/read"]
