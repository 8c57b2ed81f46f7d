"""The parts of `mcpspec run` that need no sandbox: line framing with a cap, the streamed-result
checker, strict parsing, the rate windows and the tool policy (real mcp types, a real Plan)."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp.types import Tool

from mcpspec.api import load_text
from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.run.framing import FramingError, LineReader, Oversized, ResultScanner, parse_line, stream_head
from mcpspec.run.limits import CallLimiter
from mcpspec.run.lockfile import Lock
from mcpspec.run.policy import ToolPolicy


def lines_of(data: bytes, cap: int) -> list[object]:
    async def run() -> list[object]:
        stream = asyncio.StreamReader()
        stream.feed_data(data)
        stream.feed_eof()
        reader = LineReader(stream, cap)
        out: list[object] = []
        while (item := await reader.next()) is not None:
            if isinstance(item, Oversized):
                rest = b"".join([piece async for piece in reader.rest()])
                out.append(("big", len(item.prefix) + len(rest)))
            else:
                out.append(item)
        return out

    return asyncio.run(run())


def test_lines_up_to_the_cap_are_whole_and_longer_ones_stream() -> None:
    big = b"z" * 300_000
    assert lines_of(b"a\n" + big + b"\nb\nlast", 100_000) == [b"a", ("big", len(big)), b"b", b"last"]


def test_skip_discards_the_rest_of_an_oversized_line_only() -> None:
    async def run() -> list[object]:
        stream = asyncio.StreamReader()
        stream.feed_data(b"q" * 200_000 + b"\nnext\n")
        stream.feed_eof()
        reader = LineReader(stream, 1000)
        head = await reader.next()
        assert isinstance(head, Oversized)
        await reader.skip()
        await reader.skip()  # nothing left of that line: the next one stays
        return [await reader.next(), await reader.next()]

    assert asyncio.run(run()) == [b"next", None]


@pytest.mark.parametrize(
    "line",
    [b"\xff{}", b"{not json", b'{"a":1,"a":2}', b'{"a":NaN}', b'{"a":Infinity}', b"[" * 100_000],
)
def test_strict_parsing_refuses(line: bytes) -> None:
    with pytest.raises(FramingError):
        parse_line(line)


def scan(body: bytes, chunk: int = 7) -> ResultScanner:
    scanner = ResultScanner()
    for start in range(0, len(body), chunk):
        scanner.feed(body[start : start + chunk])
    scanner.finish()
    return scanner


def test_a_call_result_passes_the_scanner_split_anywhere() -> None:
    body = json.dumps({"content": [{"type": "text", "text": 'a "quoted" \\ {[}] ünïcode ' * 50}], "isError": False}).encode() + b" }"
    for chunk in (1, 2, 3, 7, 64, len(body)):
        assert scan(body, chunk).size == len(body)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"content":[],"tools":[]}}', "key"),
        (b'{"content":[],"content":[]}}', "repeats"),
        (b'{"content":[}]}', "brackets"),
        (b'{"content":[]}}, "id": 9}', "goes on"),
        (b'{"content":[]}', "ended"),
        (b'{"content":["\xc3"]}}', "UTF-8"),
        (b'{"cont\\u0065nt":[]}}', "key"),
        (b'{"content":' + b"[" * 300 + b"]" * 300 + b"}}", "deeply"),
    ],
)
def test_the_scanner_refuses(body: bytes, says: str) -> None:
    with pytest.raises(FramingError, match=says):
        scan(body)


def test_stream_head_needs_jsonrpc_and_id_before_a_result_object() -> None:
    assert stream_head(b'{"jsonrpc":"2.0","id":12,"result":{"content"') == (12, 34)
    assert stream_head(b'{ "id" : "a-1" , "jsonrpc":"2.0", "result": {')[0] == "a-1"  # type: ignore[index]
    assert stream_head(b'{"result":{},"jsonrpc":"2.0","id":1}') is None
    assert stream_head(b'{"jsonrpc":"2.0","id":1,"error":{') is None
    assert stream_head(b'{"jsonrpc":"2.0","id":1,"result":[') is None


SPEC = """version: 1
project: unit
servers:
  s:
    command: [x]
    limits: {requests_per_minute: 3, call_timeout: 1m}
    tools:
      a: {limits: {requests_per_minute: 1, call_timeout: 5s}}
      b: {}
"""


@pytest.fixture
def sandbox() -> EffectiveSandbox:
    return load_text(SPEC).servers["s"]


def test_rates_per_server_and_per_tool_over_a_sliding_minute(sandbox: EffectiveSandbox) -> None:
    now = [0.0]
    limiter = CallLimiter(sandbox, clock=lambda: now[0])
    assert limiter.admit("a") is None
    assert "tool 'a'" in (limiter.admit("a") or "")
    assert limiter.admit("b") is None and limiter.admit("b") is None
    assert "server" in (limiter.admit("b") or "")
    now[0] = 60.0
    assert limiter.admit("a") is None
    assert limiter.timeout("a") == 5 and limiter.timeout("b") == 60


def tool(name: str, description: str = "d") -> Tool:
    return Tool(name=name, description=description, input_schema={"type": "object"})


def test_policy_hides_unlisted_new_and_changed_tools(sandbox: EffectiveSandbox) -> None:
    lock = Lock().with_server("s", [tool("a")])
    policy = ToolPolicy(sandbox, lock)
    assert policy.needs_listing
    shown, hidden = policy.screen([tool("a", "changed"), tool("b"), tool("c")])
    assert shown == [] and {(h.name, h.reason) for h in hidden} == {("a", "changed"), ("b", "new"), ("c", "unlisted")}
    policy.learn(shown, hidden, first=True, last=True, epoch=policy.epoch)
    assert not policy.needs_listing
    assert policy.refusal("a").reason == "changed"  # type: ignore[union-attr]
    assert policy.refusal("zzz").reason == "unlisted"  # type: ignore[union-attr]
    before = policy.epoch
    policy.forget()
    assert policy.needs_listing
    policy.learn([tool("a")], [], first=True, last=True, epoch=before)  # asked for before list_changed: stale
    assert policy.needs_listing and policy.refusal("a").reason == "unoffered"  # type: ignore[union-attr]
    unlocked = ToolPolicy(sandbox, None)
    assert not unlocked.needs_listing and unlocked.refusal("a") is None


def test_a_lone_surrogate_escape_is_refused_a_pair_is_a_character() -> None:
    """Written on, a lone surrogate is bytes that are not UTF-8: the server would read another value than the approver saw."""
    assert parse_line(b'{"a":"\\ud83d\\ude00"}') == {"a": "\U0001f600"}
    assert parse_line(b'{"a":"\\\\ud800"}') == {"a": "\\ud800"}  # an escaped backslash: plain text
    for line in (b'{"a":"\\ud800"}', b'{"a":"\\uDFFF x"}', b'{"\\udc00":1}', b'{"a":"\\ude00\\ud83d"}'):
        with pytest.raises(FramingError, match="lone surrogate"):
            parse_line(line)


def test_a_prompt_needs_a_listing_since_the_servers_last_prompts_list_changed(sandbox: EffectiveSandbox) -> None:
    prompt = {"name": "p", "description": "d"}
    policy = ToolPolicy(sandbox, Lock().with_server("s", [], prompts=[prompt]))
    assert "list them first" in (policy.item_refusal("prompts", "p") or "")  # never listed
    assert policy.screen_items("prompts", [prompt]) == ([prompt], [])
    assert policy.item_refusal("prompts", "p") is None
    policy.forget_items("prompts")  # notifications/prompts/list_changed
    assert "list them first" in (policy.item_refusal("prompts", "p") or "")
    shown, hidden = policy.screen_items("prompts", [{**prompt, "description": "changed"}])
    assert shown == [] and [h.reason for h in hidden] == ["changed"]
    assert "differs from its pin" in (policy.item_refusal("prompts", "p") or "")
    assert "not in mcp-sandbox.lock" in (policy.item_refusal("prompts", "q") or "")


def test_a_late_answer_to_the_relays_own_listing_is_dropped_and_the_calls_stay_refused(sandbox: EffectiveSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """The relay's own tools/list times out; the server's answer arriving afterwards must neither end the
    session (a cancelled waiter's set_result raised InvalidStateError) nor renew any verdict."""
    import socket

    from mcpspec.run import relay as relay_module

    monkeypatch.setattr(relay_module, "LISTING_TIMEOUT", 0.2)

    async def scenario() -> None:
        streams = []
        for _ in range(2):
            ours, theirs = socket.socketpair()
            streams.append((await asyncio.open_connection(sock=ours), theirs))
        (client_reader, client_writer), _client_peer = streams[0]
        (server_reader, server_writer), _server_peer = streams[1]
        policy = ToolPolicy(sandbox, Lock().with_server("s", [tool("a")]))
        relay = relay_module.Relay(policy, CallLimiter(sandbox), _Silent(), None, client_reader, client_writer, server_writer, server_reader)
        await relay.list_tools_myself()
        assert not relay.pending  # the timed-out request is off the books
        late = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a", "description": "d", "inputSchema": {"type": "object"}}]}}).encode()
        assert policy.refusal("a") is not None  # nothing was offered in time: refused
        await relay.server_message(late)  # raised InvalidStateError before
        assert policy.refusal("a") is not None  # the late listing renewed nothing
        for (_, writer), peer in streams:
            writer.close()
            peer.close()

    asyncio.run(scenario())


class _Silent:
    def write(self, event: str, **fields: object) -> None:
        pass
