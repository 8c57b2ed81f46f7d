"""What a listing hides cannot be read by name (real server, real sandbox, real `mcpspec run`).

tests/probe/resource_server.py (the `mcp` SDK) lists a clean resource, a poisoned one, a clean
template whose handler reads a URI leniently (case, percent-escapes, slashes) and a poisoned template;
the poisoning checks hide the poisoned two from their listings. A client that names them anyway, in
any spelling the server would take for them, is refused (JSON-RPC error, audited), and the server
never runs the read. tests/probe/shifting_server.py gives the lock's half: a resource new since the
lock, or under a template changed since, is refused though the client never listed anything.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conftest import run_cli
from test_lock_everything import EVIL, OFFER, locked_spec, offer
from test_run_agent_real import raw_agent_session
from test_run_relay_real import Await, box, raw_session, received, write_spec

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import SANDBOX_PYTHON, Sandbox

__all__ = ["box"]
SECRET = "SECRET-NOTE-CONTENT"

# Each a spelling of the hidden notes://secret the lenient server resolves to it, or a URI under only the hidden template.
HIDDEN_SPELLINGS = [
    "notes://secret", "NOTES://SECRET", "notes://Secret", "notes://%73ecret", "notes://%2573ecret", "notes://secret/",
    "notes://x/../secret", "notes://./secret", "notes://secret?x=1", "notes://secret#top", "notes:\uff0f\uff0fsecret",
    "notes://\uff53ecret", "notes:\\\\secret", "notes://sec%72et", "vault://k1", "VAULT://k1", "vault://%6b1",
]  # fmt: skip


def read(request_id: int, uri: str, method: str = "resources/read") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"uri": uri}}


def complete(request_id: int, ref: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "completion/complete", "params": {"ref": ref, "argument": {"name": "title", "value": "s"}}}


def refused(reply: dict[str, Any]) -> bool:
    return "refused by policy" in str(reply.get("error", {}).get("message", ""))


def test_a_hidden_resource_or_template_is_refused_by_name_in_every_spelling(box: Any) -> None:
    spec = write_spec(box, "res-hidden", "      ping: {effects: []}", script="resource_server.py")
    attacks = [read(100 + index, uri) for index, uri in enumerate(HIDDEN_SPELLINGS)]
    messages: list[Any] = [
        read(2, "notes://secret"), Await(2),  # before any listing: the relay lists them itself
        {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, {"jsonrpc": "2.0", "id": 4, "method": "resources/templates/list"}, Await(4),
        *attacks,
        read(5, "notes://secret", "resources/subscribe"), read(6, "vault://k2", "resources/subscribe"),
        complete(7, {"type": "ref/resource", "uri": "vault://{key}"}), complete(8, {"type": "ref/resource", "uri": "notes://secret"}),
        complete(9, {"type": "ref/other", "uri": "notes://all"}),
        [read(10, "notes://secret")],  # a batch
        read(11, "notes://all"), read(12, "notes://hello"), complete(13, {"type": "ref/resource", "uri": "notes://{title}"}),
    ]  # fmt: skip
    replies, status, stderr = raw_session(spec, "r1", messages)
    seen = json.dumps(replies)
    assert SECRET not in seen, seen[:4000]
    for request_id in (2, *range(100, 100 + len(HIDDEN_SPELLINGS)), 5, 6, 7, 8, 9):
        assert refused(replies[request_id]), (request_id, replies.get(request_id), stderr[-2000:])
    assert "batches are not relayed" in seen
    assert [item["uri"] for item in replies[3]["result"]["resources"]] == ["notes://all"]
    assert [item["uriTemplate"] for item in replies[4]["result"]["resourceTemplates"]] == ["notes://{title}"]
    assert replies[11]["result"]["contents"][0]["text"] == "all the notes"
    assert replies[12]["result"]["contents"][0]["text"] == "note hello"
    assert not refused(replies[13]), replies[13]
    assert received(box, "res-hidden", "r1", "reads.log") == ["all", "note hello"]  # no refused read ever ran
    audited = [json.loads(line) for line in stderr.splitlines() if line.startswith("{") and '"message_refused"' in line]
    refused_reads = [
        line for line in audited if line["direction"] == "client" and line.get("method") in ("resources/read", "resources/subscribe", "completion/complete")
    ]
    assert len(refused_reads) == len(HIDDEN_SPELLINGS) + 6, stderr[-3000:]
    assert status == 3, stderr[-2000:]  # what has poisoning findings was hidden


def test_with_a_lock_only_a_pinned_resource_or_template_shown_unchanged_is_read(box: Any) -> None:
    spec = locked_spec(box, "res-lock")
    data = json.loads(json.dumps(OFFER))
    data["resources"].append({"uri": "notes://new", "name": "new", "description": "New since the lock."})
    data["resource_templates"][0]["description"] = EVIL
    offer(box, data)
    try:
        messages: list[Any] = [
            read(1, "notes://new"), read(2, "notes://hello"), read(3, "notes://all"), read(4, "other://thing"),
            read(5, "notes://all/"), read(6, "NOTES://all"),
        ]  # fmt: skip
        replies, _, _ = raw_session(spec, "r1", messages)
    finally:
        offer(box, OFFER)
    assert refused(replies[1]) and "hidden by its listing" in replies[1]["error"]["message"], replies[1]  # the relay listed them itself
    assert refused(replies[2]) and "notes://{title}" in replies[2]["error"]["message"], replies[2]  # only its changed template
    assert not refused(replies[3]), replies[3]
    assert all(refused(replies[n]) for n in (4, 5, 6)), replies
    reads = [line for line in received(box, "res-lock", "r1", "received.log") if "resources/read" in line]
    assert len(reads) == 1 and "notes://all" in reads[0], reads
    assert run_cli("lock", str(spec), "--check", timeout=120).returncode == 0


def agent_spec(box: Sandbox) -> Path:
    """Two resource servers: agent `pair` serves both (they list the same URIs), agent `solo` one of them."""
    directory = box.base / "res-agent"
    directory.mkdir()
    directory.chmod(0o755)
    servers = "".join(
        f"""  {name}:
    command: [{SANDBOX_PYTHON}, /probe/resource_server.py, {box.marker}]
    env: {{set: {{PYTHONPATH: /opt/site}}}}
    runtime: {{memory: 1Gi}}
    logging: {{sink: {box.base}/audit-res-{name}.jsonl}}
    mounts:
      - {{from: {box.site}, to: /opt/site}}
      - {{from: {box.probe_dir}, to: /probe}}
      - {{from: workspace.out_{name}, to: /workspace/output}}
    tools:
      ping: {{effects: []}}
"""
        for name in ("alpha", "beta")
    )
    path = directory / "mcp-sandbox.yaml"
    path.write_text(
        f"""version: 1
project: run-resources
workspace:
  root: {box.base}/ws-res-agent
  dirs:
    out_alpha: {{mode: rw}}
    out_beta: {{mode: rw}}
agents:
  pair: {{servers: [alpha, beta]}}
  solo: {{servers: [alpha]}}
servers:
{servers}""",
        encoding="utf-8",
    )
    return path


def audit_lines(box: Sandbox, server: str, run_id: str) -> list[dict[str, Any]]:
    path = box.base / f"audit-res-{server}.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []
    return [line for line in lines if line.get("run_id") == run_id]


def test_through_an_agent_endpoint_a_uri_two_servers_list_is_refused_and_a_hidden_one_too(box: Sandbox) -> None:
    spec = agent_spec(box)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "resources/list"}
    replies = raw_agent_session(spec, "p1", [[listing], [read(2, "notes://all"), read(3, "notes://all", "resources/subscribe")]], {"init", 1, 2, 3}, agent="pair")
    assert replies[1]["result"]["resources"] == [], replies[1]  # neither server's notes://all is shown
    for request_id in (2, 3):
        assert refused(replies[request_id]) and "several servers" in replies[request_id]["error"]["message"], replies[request_id]
    for server in ("alpha", "beta"):
        lines = audit_lines(box, server, "p1")
        assert sorted(line["method"] for line in lines if line["event"] == "message_refused" and "listed by servers" in line["reason"]) == ["resources/read", "resources/subscribe"], lines
        assert any(line["event"] == "pin_refused" and line["reason"] == "ambiguous" for line in lines), lines
    assert not any((box.base / "ws-res-agent" / "pair" / "p1" / f"out_{server}" / "reads.log").exists() for server in ("alpha", "beta"))

    attacks = [read(100 + index, uri) for index, uri in enumerate(HIDDEN_SPELLINGS)]
    replies = raw_agent_session(spec, "s1", [[listing], [*attacks, [read(4, "notes://secret")], read(5, "notes://all")]], {"init", 1, 5, *range(100, 100 + len(attacks))}, agent="solo")
    assert SECRET not in json.dumps(replies), json.dumps(replies)[:3000]
    assert all(refused(replies[100 + index]) for index in range(len(attacks))), replies
    assert "batches are not relayed" in json.dumps(replies[None])
    assert replies[5]["result"]["contents"][0]["text"] == "all the notes"
    assert (box.base / "ws-res-agent" / "solo" / "s1" / "out_alpha" / "reads.log").read_text().splitlines() == ["all"]


def test_a_2026_07_28_client_is_judged_the_same(box: Sandbox) -> None:
    """The SDK's own 2026-07-28 client (no handshake: the relay lists for itself with the envelope)."""
    import asyncio
    import os

    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError

    from test_run_relay_real import RUN

    spec = write_spec(box, "res-modern", "      ping: {effects: []}", script="resource_server.py")

    async def run() -> dict[str, Any]:
        params = StdioServerParameters(command=RUN[0], args=[*RUN[1:], str(spec), "probe", "--run-id", "m1"], env=dict(os.environ))
        found: dict[str, Any] = {}
        async with Client(params, mode="2026-07-28", raise_exceptions=True) as client:
            for uri in ("notes://secret", "notes://%73ecret", "vault://k1"):
                try:
                    found[uri] = await client.read_resource(uri)
                except MCPError as exc:
                    found[uri] = str(exc)
            found["notes://all"] = await client.read_resource("notes://all")
            found["version"] = client.protocol_version
        return found

    found = asyncio.run(asyncio.wait_for(run(), 120))
    assert found["version"] == "2026-07-28"
    for uri in ("notes://secret", "notes://%73ecret", "vault://k1"):
        assert isinstance(found[uri], str) and "refused by policy" in found[uri], found[uri]
    assert found["notes://all"].contents[0].text == "all the notes"
    assert received(box, "res-modern", "m1", "reads.log") == ["all"]
