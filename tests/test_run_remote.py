"""`mcpspec run` with a remote (``placement: external``) streamable HTTP server.

The server is the `mcp` SDK's streamable HTTP server under uvicorn, run by the test on 127.0.0.1;
the client is the SDK's stdio client (or raw lines) talking to `mcpspec run`. The server logs every
HTTP request it receives (with its Authorization header) and every call, so a test proves what
reached it and what did not. Names are resolved through the resolver seam (never DNS, never
/etc/hosts), and every address a test lets `mcpspec run` try is a loopback one the test listens
on, so a refused connection would be seen if it were made.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpspec.run import remote
from mcpspec.run.remote import RemoteServer
from mcpspec.run.remote_address import RemoteRefused, address_refusal, checked_addresses, parse_endpoint

PROBE = Path(__file__).parent / "probe"
TOKEN = "tok-remote-7f3a9c2e5b1d4f60a8e2"
RUN = [sys.executable, "-m", "mcpspec", "run"]


class Remote:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.log = base / "server.log"
        self.trap = _listener("127.0.0.1")  # the redirect target: nothing may connect to it
        port_file = base / "port"
        self.process = subprocess.Popen(
            [sys.executable, str(PROBE / "remote_http_server.py"), str(self.log), TOKEN, str(port_file), str(self.trap.getsockname()[1])],
            stdout=subprocess.DEVNULL, stderr=open(base / "server.stderr", "w"),  # noqa: SIM115
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError((base / "server.stderr").read_text())
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        self.secret = base / "token"
        self.secret.write_text(TOKEN + "\n")
        self.secret.chmod(0o600)

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def calls(self) -> list[str]:
        return [entry["call"] for entry in self.entries() if "call" in entry]

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:  # uvicorn waits for open streams to end
            self.process.kill()
            self.process.wait()
        self.trap.close()


def _listener(host: str, family: int = socket.AF_INET, port: int = 0) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind((host, port))
    sock.listen(8)
    sock.setblocking(False)
    return sock


def _never_connected(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
    except BlockingIOError:
        return True
    return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    remote_server = Remote(tmp_path_factory.mktemp("remote"))
    yield remote_server
    remote_server.close()


def write_spec(base: Path, name: str, url: str, secret: Path, tools: str = "") -> Path:
    directory = base / name
    directory.mkdir()
    path = directory / "mcp-sandbox.yaml"
    tools = tools or """      echo: {description: Echo the text., effects: [none]}
      ask: {effects: [none]}
      write_file: {effects: [writes_local], approval: always}"""
    path.write_text(
        f"""version: 1
project: remote-e2e
secrets:
  remote-token: {{provider: file, ref: {secret}}}
agents:
  tester: {{servers: [remote]}}
servers:
  remote:
    placement: external
    transport:
      type: http
      url: {url}
      auth: {{type: bearer}}
    secrets:
      - {{use: remote-token, as: {{env: REMOTE_TOKEN}}}}
    logging: {{sink: {directory}/audit.jsonl}}
    tools:
{tools}
""",
        encoding="utf-8",
    )
    return path


def session(spec: Path, steps: Any, *extra: str, command: list[str] | None = None) -> Any:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = command or RUN

    async def run() -> Any:
        params = StdioServerParameters(command=argv[0], args=[*argv[1:], str(spec), "remote", *extra], env=dict(os.environ))
        with open(spec.with_suffix(".stderr"), "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                return await steps(client)

    return asyncio.run(asyncio.wait_for(run(), 60))


def raw_initialize(spec: Path, command: list[str] | None = None) -> tuple[dict[str, Any], str, int]:
    """Send initialize as one raw line; (the reply, what mcpspec run said on stderr, its exit status)."""
    line = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    process = subprocess.Popen([*(command or RUN), str(spec), "remote"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(line) + "\n")
    process.stdin.flush()
    reply = process.stdout.readline()  # the session stays open until the answer came
    _, said = process.communicate("", timeout=60)
    return json.loads(reply), said, process.returncode


def audit(spec: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (spec.parent / "audit.jsonl").read_text().splitlines()]


def text_of(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


# ---------------------------------------------------------------- end to end


def test_a_remote_server_gets_the_allowlist_approvals_and_refusals_and_the_credential_only_at_egress(server: Remote, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "policy", f"http://127.0.0.1:{server.port}/mcp", server.secret)
    before = len(server.entries())

    async def steps(client: Any) -> Any:
        listed = await client.list_tools()
        echoed = await client.call_tool("echo", {"text": "hello"})
        unlisted = await client.call_tool("hidden_tool", {})
        denied = await client.call_tool("write_file", {"path": "/etc/x", "data": "d"})
        asked = await client.call_tool("ask", {})
        return sorted(tool.name for tool in listed.tools), echoed, unlisted, denied, asked, listed

    names, echoed, unlisted, denied, asked, listed = session(spec, steps, "--approver", "false")
    assert names == ["ask", "echo", "write_file"]
    assert text_of(echoed) == "echo: hello"
    assert unlisted.is_error and "not allowed" in text_of(unlisted)
    assert denied.is_error and "denied" in text_of(denied)
    assert "sampling refused" in text_of(asked) and "not relayed" in text_of(asked)
    requests = server.entries()[before:]
    assert {entry["call"] for entry in requests if "call" in entry} == {"echo", "ask"}  # the refused calls never arrived
    http = [entry for entry in requests if "method" in entry]
    assert http and all(entry["authorization"] == f"Bearer {TOKEN}" for entry in http)  # the credential reached the server
    seen_by_client = json.dumps([listed.model_dump(mode="json"), *(r.model_dump(mode="json") for r in (echoed, unlisted, denied, asked))])
    for where in (seen_by_client, spec.with_suffix(".stderr").read_text(), (spec.parent / "audit.jsonl").read_text()):
        assert TOKEN not in where and TOKEN[4:20] not in where
    start = audit(spec)[0]
    assert start["event"] == "session_start" and start["resource"] == f"http://127.0.0.1:{server.port}/mcp" and start["auth"] == "bearer"


def test_a_remote_tool_that_differs_from_its_pin_is_hidden_and_its_call_never_reaches_the_server(server: Remote, tmp_path: Path) -> None:
    from mcp.types import Tool

    from mcpspec.run.lockfile import Lock, lock_path, write_lock

    spec = write_spec(tmp_path, "pins", f"http://127.0.0.1:{server.port}/mcp", server.secret, "      echo: {effects: [none]}")
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "remote-probe", "version": ""}}
    pinned = Tool(name="echo", description="Echo the text, reviewed.", input_schema={"type": "object"})
    write_lock(lock_path(spec), Lock().with_server("remote", [pinned], initialize=initialize))
    before = len(server.calls())

    async def steps(client: Any) -> Any:
        listed = await client.list_tools()
        return [tool.name for tool in listed.tools], await client.call_tool("echo", {"text": "x"})

    names, called = session(spec, steps)
    assert names == [] and called.is_error and "echo" in text_of(called)
    assert server.calls()[before:] == []
    assert any(entry["event"] == "tool_hidden" and entry["reason"] == "changed" for entry in audit(spec))


def test_a_redirect_to_another_port_is_refused_and_never_followed(server: Remote, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "redirect", f"http://127.0.0.1:{server.port}/moved", server.secret)
    reply, said, _ = raw_initialize(spec)
    assert "redirect" in reply["error"]["message"] and f"127.0.0.1:{server.trap.getsockname()[1]}" in reply["error"]["message"]
    assert _never_connected(server.trap)
    assert "redirects are not followed" in said and TOKEN not in said
    assert any(entry["event"] == "remote_refused" for entry in audit(spec))


@pytest.mark.parametrize(
    ("address", "listen_on", "family"), [("127.0.0.2", "127.0.0.2", socket.AF_INET), ("::ffff:127.0.0.1", "127.0.0.1", socket.AF_INET), ("::1", "::1", socket.AF_INET6)]
)
def test_a_name_that_resolves_to_a_refused_address_is_refused_before_any_connection(server: Remote, tmp_path: Path, address: str, listen_on: str, family: int) -> None:
    trap = _listener(listen_on, family)
    try:
        port = trap.getsockname()[1]
        spec = write_spec(tmp_path, "resolved", f"https://refused.test:{port}/mcp", server.secret)
        command = [sys.executable, str(PROBE / "run_with_resolver.py"), json.dumps({"refused.test": [address]}), "run"]
        reply, said, _ = raw_initialize(spec, command)
        assert "refused.test resolves to a refused address" in reply["error"]["message"] and "Loopback" in reply["error"]["message"]
        assert _never_connected(trap)
        assert TOKEN not in said
    finally:
        trap.close()


def test_plain_http_to_a_name_is_refused_at_start_even_when_it_resolves_to_loopback(server: Remote, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "plain", f"http://localhost:{server.port}/mcp", server.secret)
    command = [sys.executable, str(PROBE / "run_with_resolver.py"), json.dumps({"localhost": ["127.0.0.1"]}), "run"]
    before = len(server.entries())
    done = subprocess.run([*command, str(spec), "remote"], input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "plain http to localhost is refused" in done.stderr
    assert len(server.entries()) == before


# ---------------------------------------------------------------- addresses (nothing is sent)


@pytest.mark.parametrize(
    "url",
    ["http://mcp.example.com/x", "http://localhost:8000/mcp", "https://user:pw@mcp.example.com/", "https://metadata.google.internal/", "ftp://x/", "https://h/a#f"],
)
def test_urls_that_are_never_reached(url: str) -> None:
    with pytest.raises(RemoteRefused):
        parse_endpoint(url)


@pytest.mark.parametrize(
    "address",
    ["127.0.0.2", "10.1.2.3", "100.64.0.1", "169.254.169.254", "172.17.0.1", "192.168.1.1", "0.0.0.0", "::1", "::", "fe80::1", "fd00:ec2::254",
     "fc00::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "2001::1", "::127.0.0.1", "ff02::1", "224.0.0.1"],
)  # fmt: skip
def test_special_addresses_are_refused_for_a_named_host(address: str) -> None:
    endpoint = parse_endpoint("https://mcp.example.com/mcp")
    assert address_refusal(ipaddress.ip_address(address), endpoint) is not None
    assert address_refusal(ipaddress.ip_address("93.184.215.14"), endpoint) is None
    assert address_refusal(ipaddress.ip_address("2606:2800:21f:cb07:6820:80da:af6b:8b2c"), endpoint) is None


def test_the_loopback_exception_covers_only_the_literal_the_spec_names() -> None:
    endpoint = parse_endpoint("http://127.0.0.1:8000/mcp")
    assert address_refusal(ipaddress.ip_address("127.0.0.1"), endpoint) is None
    assert address_refusal(ipaddress.ip_address("::ffff:127.0.0.1"), endpoint) is None  # the same address
    assert address_refusal(ipaddress.ip_address("127.0.0.2"), endpoint) is not None
    assert address_refusal(ipaddress.ip_address("10.0.0.1"), endpoint) is not None
    assert parse_endpoint("http://[::1]:9/mcp").canonical == "http://[::1]:9/mcp"
    assert parse_endpoint("HTTPS://MCP.Example.com:443/a?b=1").canonical == "https://mcp.example.com/a?b=1"


def test_a_name_with_one_refused_address_among_public_ones_is_refused_whole() -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "::ffff:10.0.0.1"]

    with pytest.raises(RemoteRefused, match=r"10\.0\.0\.1"):
        asyncio.run(checked_addresses(parse_endpoint("https://mixed.test/mcp"), resolve))


# ---------------------------------------------------------------- limits of the answer (loopback, in process)


class _Audit:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def write(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


async def _answered_by(respond: bytes, stream_seconds: float) -> tuple[dict[str, Any], _Audit]:
    """One tools/call through a RemoteServer to a loopback HTTP server that answers ``respond`` and
    then keeps the connection open; the relay's view of the answer."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(respond)
        with contextlib.suppress(ConnectionError):
            while not reader.at_eof():  # an SSE stream that never ends: a comment line now and then
                await writer.drain()
                await asyncio.sleep(0.05)
                writer.write(b": keep-alive\n\n" if b"event-stream" in respond else b"")

    listening = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    log = _Audit()
    bridge = RemoteServer(parse_endpoint(f"http://127.0.0.1:{port}/mcp"), None, log, lambda text: None)
    bridge.stream_seconds = stream_seconds
    to_server, from_server, task = await bridge.open()
    to_server.write(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}\n')
    reply = json.loads(await asyncio.wait_for(from_server.readline(), 10))
    while "id" not in reply:  # what the stream carried before: passed on to the relay
        reply = json.loads(await asyncio.wait_for(from_server.readline(), 10))
    to_server.close()
    await asyncio.wait_for(task, 10)
    listening.close()
    return reply, log


def test_an_sse_answer_that_never_ends_is_cut_at_its_limit_and_the_request_answered() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
    started = time.monotonic()
    reply, log = asyncio.run(_answered_by(head + b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n", 0.5))
    waited = time.monotonic() - started
    assert reply["id"] == 7 and "took longer than 0.5s" in reply["error"]["message"]
    assert waited < 5 and [event for event, _ in log.lines] == ["remote_refused"]


def test_an_oversized_answer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "MESSAGE_CAP", 1024)
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "x" * 4096}]}}).encode()
    reply, _ = asyncio.run(_answered_by(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body, 5))
    assert reply["id"] == 7 and "larger than 1024 bytes" in reply["error"]["message"]
    event = b"event: message\ndata: " + body + b"\n\n"
    reply, _ = asyncio.run(_answered_by(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" + event, 5))
    assert reply["id"] == 7 and "larger than 1024 bytes" in reply["error"]["message"]


# ---------------------------------------------------------------- --listen: the client side over streamable HTTP on loopback


def listening(spec: Path, token_file: Path) -> tuple[subprocess.Popen[str], str]:
    """`mcpspec run SPEC remote --listen 127.0.0.1:0`, and the stderr line that names its URL."""
    process = subprocess.Popen([*RUN, str(spec), "remote", "--listen", "127.0.0.1:0", "--token-file", str(token_file)], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said = process.stderr.readline()
    while said and "listening on" not in said:  # after the warning that no lock pins the tools
        said = process.stderr.readline()
    return process, said


def test_listen_serves_the_relay_on_loopback_with_a_per_run_token_and_drops_the_clients_authorization(server: Remote, tmp_path: Path) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    spec = write_spec(tmp_path, "listen", f"http://127.0.0.1:{server.port}/mcp", server.secret)
    token_file = tmp_path / "run-token"
    process, said = listening(spec, token_file)
    assert process.stderr is not None
    try:
        url = said.split("listening on ", 1)[1].split(";", 1)[0]
        token = token_file.read_text().strip()
        assert (token_file.stat().st_mode & 0o777) == 0o600 and token not in said
        before = len(server.entries())

        async def steps() -> Any:
            statuses = []
            async with httpx2.AsyncClient() as plain:
                body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                statuses.append((await plain.post(url, json=body)).status_code)
                statuses.append((await plain.post(url, json=body, headers={"Authorization": "Bearer wrong"})).status_code)
                statuses.append((await plain.post(url, json=body, headers={"Authorization": f"Bearer {token}", "Host": "evil.example"})).status_code)
                statuses.append((await plain.post(url, json=body, headers={"Authorization": f"Bearer {token}", "Origin": "http://evil.example"})).status_code)
                # 2026-07-28: headers a proxy would route by that disagree with the body are refused (-32020), never relayed
                modern = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "smuggled"}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}
                for routed in ({"Mcp-Method": "tools/call", "Mcp-Name": "write_file"}, {"Mcp-Method": "tools/list", "Mcp-Name": "echo"}, {}):
                    answer = await plain.post(url, json=modern, headers={"Authorization": f"Bearer {token}", **routed})
                    statuses.append((answer.status_code, answer.json()["error"]["code"]))
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                streamable_http_client(url, http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as client,
            ):
                await client.initialize()
                listed = await client.list_tools()
                echoed = await client.call_tool("echo", {"text": "over http"})
                unlisted = await client.call_tool("hidden_tool", {})
                return statuses, sorted(tool.name for tool in listed.tools), echoed, unlisted

        statuses, names, echoed, unlisted = asyncio.run(asyncio.wait_for(steps(), 60))
        assert statuses == [401, 401, 403, 403, (400, -32020), (400, -32020), (400, -32020)]
        assert names == ["ask", "echo", "write_file"] and text_of(echoed) == "echo: over http" and unlisted.is_error
        reached = server.entries()[before:]
        assert [entry["call"] for entry in reached if "call" in entry] == ["echo"]
        assert all(entry["authorization"] == f"Bearer {TOKEN}" for entry in reached if "method" in entry)  # never the client's token
        assert process.wait(30) == 0  # the client's DELETE ended the session
        rest = process.stderr.read()
        assert TOKEN not in rest and token not in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_listen_refuses_an_address_that_is_not_loopback(tmp_path: Path, server: Remote) -> None:
    spec = write_spec(tmp_path, "wide", f"http://127.0.0.1:{server.port}/mcp", server.secret)
    done = subprocess.run([*RUN, str(spec), "remote", "--listen", "0.0.0.0:8931"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "loopback" in done.stderr


def test_the_connection_goes_to_the_address_that_was_checked_not_to_a_second_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: the name answers an allowed address, then a refused one. The connection is made
    to the checked address, on the one lookup: the second answer is never asked for nor reached.
    (127.0.0.3 stands in for a public address: the check is narrowed to allow it alone.)"""
    from mcpspec.run import remote_address

    checked = _listener("127.0.0.3")
    port = checked.getsockname()[1]
    rebound = _listener("127.0.0.4", port=port)
    answers = [["127.0.0.3"], ["127.0.0.4"]]
    lookups: list[str] = []

    async def resolve(host: str, p: int) -> list[str]:
        lookups.append(host)
        return answers[min(len(lookups) - 1, 1)]

    real = remote_address.address_refusal
    monkeypatch.setattr(remote_address, "address_refusal", lambda a, e: None if str(a) == "127.0.0.3" else real(a, e))
    monkeypatch.setattr(remote_address, "CONNECT_TIMEOUT", 1.0)

    async def attempt() -> None:
        with pytest.raises(ConnectionError):  # the stand-in never answers the TLS handshake
            await remote_address.connect(parse_endpoint(f"https://rebind.test:{port}/mcp"), resolve)

    try:
        asyncio.run(attempt())
        assert lookups == ["rebind.test"]
        assert not _never_connected(checked)  # the checked address was reached
        assert _never_connected(rebound)
    finally:
        checked.close()
        rebound.close()


def test_mcpspec_lock_pins_a_remote_server_through_the_same_checked_client_and_run_holds_to_it(server: Remote, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "lock", f"http://127.0.0.1:{server.port}/mcp", server.secret)
    before = len(server.entries())
    done = subprocess.run([sys.executable, "-m", "mcpspec", "lock", str(spec), "remote"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pins = json.loads((spec.parent / "mcp-sandbox.lock").read_text())["servers"]["remote"]
    assert sorted(pins["tools"]) == ["ask", "echo", "hidden_tool", "write_file"] and pins["initialize"]["serverInfo"]["name"] == "remote-probe"
    assert all(entry["authorization"] == f"Bearer {TOKEN}" for entry in server.entries()[before:] if "method" in entry)
    assert TOKEN not in done.stdout + done.stderr

    async def steps(client: Any) -> Any:
        return sorted(tool.name for tool in (await client.list_tools()).tools), await client.call_tool("echo", {"text": "pinned"})

    names, echoed = session(spec, steps)
    assert names == ["ask", "echo", "write_file"] and text_of(echoed) == "echo: pinned"
    assert not any(entry["event"] in ("tool_hidden", "pin_refused") and entry.get("reason") != "unlisted" for entry in audit(spec))


def test_a_credential_the_remote_server_refuses_is_an_error_that_does_not_quote_it(server: Remote, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong-token"
    wrong.write_text("tok-wrong-0123456789abcdef\n")
    wrong.chmod(0o600)
    spec = write_spec(tmp_path, "wrong", f"http://127.0.0.1:{server.port}/mcp", wrong)
    reply, said, _ = raw_initialize(spec)
    assert "refused the credential (HTTP 401)" in reply["error"]["message"]
    assert "tok-wrong" not in json.dumps(reply) + said + (spec.parent / "audit.jsonl").read_text()


def test_sigterm_ends_a_remote_session_and_ends_it_at_the_server(server: Remote, tmp_path: Path) -> None:
    import signal

    spec = write_spec(tmp_path, "term", f"http://127.0.0.1:{server.port}/mcp", server.secret)
    line = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    process = subprocess.Popen([*RUN, str(spec), "remote"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(line) + "\n")
    process.stdin.flush()
    assert "result" in json.loads(process.stdout.readline())
    before = len(server.entries())
    process.send_signal(signal.SIGTERM)
    assert process.wait(20) == 128 + signal.SIGTERM
    process.communicate()
    assert [entry["method"] for entry in server.entries()[before:] if "method" in entry] == ["DELETE"]
    assert audit(spec)[-1]["event"] == "session_end"
