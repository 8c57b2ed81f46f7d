"""A real `mcpspec run` session (the probe server in its bubblewrap sandbox) writes a keyed audit
chain that `mcpspec audit verify` finds intact (the launcher's own line beside it), and exports one
OTLP span per call to a collector stand-in on loopback: the tool, decision and status, never an
argument value or a secret. A dead or silent collector costs dropped spans, counted in the audit,
never a held call."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcpspec.run.otel import OtelURLError, traces_endpoint
from test_audit_chain import reseal
from test_run_relay_real import RUN, box, session, text_of, write_spec

__all__ = ["box"]  # the fixture, shared with the relay's tests

KEY_ENV = "RUN_AUDIT_CHAIN_KEY"
KEY = "audit-chain-key-0c1d2e3f4a5b6c7d"
TOKEN = "tok-chain-93ab17e0d2"
ARGUMENT = "argument-value-5e7d1c"
VERIFY = [sys.executable, "-m", "mcpspec", "audit", "verify"]


class Collector:
    """An OTLP/HTTP collector stand-in on 127.0.0.1 that records every POST."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, bytes]] = []
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                posts.append((self.path, self.headers.get("Content-Type", ""), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[dict[str, Any]]:
        found = []
        for _, _, body in self.posts:
            for resource in json.loads(body)["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    found += scope["spans"]
        return found

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    stand_in = Collector()
    yield stand_in
    stand_in.close()


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {item["key"]: next(iter(item["value"].values())) for item in span["attributes"]}


def audited_spec(box: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    audit = box.base / f"audit-{name}.jsonl"
    spec = write_spec(
        box, name, "      echo: {effects: []}\n      identity: {effects: []}",
        server=f"    logging: {{sink: {audit}}}\n    secrets: [{{use: token, as: {{env: PROBE_TOKEN}}}}]",
    )  # fmt: skip
    spec.write_text(spec.read_text(encoding="utf-8") + "secrets:\n  token: {provider: env, ref: RUN_CHAIN_TOKEN}\n", encoding="utf-8")
    monkeypatch.setenv("RUN_CHAIN_TOKEN", TOKEN)
    monkeypatch.setenv(KEY_ENV, KEY)
    return spec, audit


async def three_calls(client: Any) -> Any:
    return [
        await client.call_tool("echo", {"text": ARGUMENT}),
        await client.call_tool("echo", {"text": TOKEN}),
        await client.call_tool("read_path", {"path": f"/{ARGUMENT}"}),
    ]


def test_a_real_run_writes_a_keyed_chain_that_verifies_and_exports_spans(box: Any, collector: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, audit = audited_spec(box, "chain", monkeypatch)
    echoed, secret, refused = session(spec, "r1", three_calls, "--audit-key-env", KEY_ENV, "--otel", collector.url)
    assert not echoed.is_error and not secret.is_error and refused.is_error and "refused by policy" in text_of(refused)
    text = audit.read_text(encoding="utf-8")
    assert KEY not in text and TOKEN not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert next(line["event"] for line in lines if "chain" in line) == "session_start"
    assert lines[0]["alg"] == "hmac-sha256" and any(line["event"] == "launch" for line in lines)  # the launcher wrote into the same sink
    exported = next(line for line in lines if line["event"] == "otel_export")
    assert exported["exported"] == 3 and exported["dropped"] == 0 and exported["collector"] == collector.url
    done = subprocess.run([*VERIFY, str(audit), "--key-env", KEY_ENV], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "1 run(s) (1 ended), 1 launcher line(s) outside the chain: intact" in done.stdout, done
    unkeyed = subprocess.run([*VERIFY, str(audit)], capture_output=True, text=True, timeout=60, check=False)
    assert unkeyed.returncode == 1 and "is keyed" in unkeyed.stdout
    # The attacker's edits of the real log: a denied call made to read as allowed, the chain recomputed
    # without the key; and the tail cut.
    raw = audit.read_bytes().splitlines()
    refused_at = next(n for n, line in enumerate(raw) if b'"tool":"read_path"' in line)
    forged = audit.with_name("forged.jsonl")
    forged.write_bytes(b"\n".join(reseal([*raw[:refused_at], raw[refused_at].replace(b'"decision":"refused"', b'"decision":"allowed"'), *raw[refused_at + 1 :]], None)) + b"\n")
    caught = subprocess.run([*VERIFY, str(forged), "--key-env", KEY_ENV], capture_output=True, text=True, timeout=60, check=False)
    assert caught.returncode == 1 and caught.stdout.startswith(f"{forged}:1: ") and "not keyed" in caught.stdout, caught
    cut = audit.with_name("cut.jsonl")
    cut.write_bytes(b"\n".join(raw[:-1]) + b"\n")
    caught = subprocess.run([*VERIFY, str(cut), "--key-env", KEY_ENV], capture_output=True, text=True, timeout=60, check=False)
    assert caught.returncode == 1 and "no session_end" in caught.stdout, caught
    stderr = spec.with_suffix(".stderr").read_text(encoding="utf-8")
    last = lines[-1]
    assert f"audit chain {last['chain']} ended at seq {last['seq']} with hash {last['hash']}" in stderr
    listed = subprocess.run([*VERIFY, str(audit), "--key-env", KEY_ENV, "--runs"], capture_output=True, text=True, timeout=60, check=False)
    assert listed.stdout.startswith(f"{audit}:1-{len(lines)}: run {last['chain']} ended at seq {last['seq']} with hash {last['hash']}\n"), listed

    assert {path for path, _, _ in collector.posts} == {"/v1/traces"}
    assert {kind for _, kind, _ in collector.posts} == {"application/json"}
    bodies = b"".join(body for _, _, body in collector.posts)
    assert ARGUMENT.encode() not in bodies and TOKEN.encode() not in bodies and KEY.encode() not in bodies
    spans = collector.spans()
    seen = sorted((attributes(s)["gen_ai.tool.name"], attributes(s)["mcpspec.decision"], attributes(s)["mcpspec.status"], s["status"]["code"]) for s in spans)
    assert seen == [("echo", "allowed", "ok", 1), ("echo", "allowed", "ok", 1), ("read_path", "refused", "unlisted", 2)]
    resource = {item["key"]: item["value"]["stringValue"] for item in json.loads(collector.posts[0][2])["resourceSpans"][0]["resource"]["attributes"]}
    assert resource["service.name"] == "mcpspec-run" and resource["mcpspec.run_id"] == "r1" and resource["mcpspec.server"] == "probe"
    for span in spans:
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16 and int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"])
        assert span["kind"] == 2 and span["name"].startswith("tools/call ")


def test_a_silent_or_dead_collector_drops_spans_counts_them_and_holds_no_call(box: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, audit = audited_spec(box, "silent", monkeypatch)
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    dead = socket.create_server(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()  # nothing listens there
    try:
        for run_id, port in (("r1", silent.getsockname()[1]), ("r2", dead_port)):
            echoed, secret, refused = session(spec, run_id, three_calls, "--otel", f"http://127.0.0.1:{port}", timeout=60)
            assert not echoed.is_error and not secret.is_error and refused.is_error
    finally:
        silent.close()
    exports = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines() if '"otel_export"' in line]
    assert [(line["exported"], line["dropped"]) for line in exports] == [(0, 3), (0, 3)]
    done = subprocess.run([*VERIFY, str(audit)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "2 run(s) (2 ended)" in done.stdout, done


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://[::1]:4318/otlp/", "http://[::1]:4318/otlp/v1/traces"),
        ("http://localhost:4318/v1/traces", "http://localhost:4318/v1/traces"),
        ("https://collector.example:4318", "https://collector.example:4318/v1/traces"),
        ("http://192.0.2.1:4318", None),
        ("http://127.0.0.1.example:4318", None),
        ("https://user:pw@collector.example", None),
        ("ftp://127.0.0.1", None),
        ("http://127.0.0.1:4318/?token=x", None),
    ],
)
def test_the_otel_url_is_https_or_http_to_loopback(url: str, endpoint: str | None) -> None:
    if endpoint is None:
        with pytest.raises(OtelURLError):
            traces_endpoint(url)
    else:
        assert traces_endpoint(url) == endpoint


def test_plain_http_to_another_host_is_a_usage_error_before_anything_starts(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text("version: 1\nproject: p\nservers:\n  s: {command: [x]}\n", encoding="utf-8")
    env = {**os.environ, "NO_KEY_HERE": "short"}
    for extra in (["--otel", "http://192.0.2.1:4318"], ["--audit-key-env", "NO_KEY_HERE"], ["--audit-key-env", "UNSET_KEY_VAR_AC"]):
        done = subprocess.run([*RUN, str(spec), "s", *extra], capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL, env=env)
        assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.startswith("mcpspec run: "), done


def test_the_audit_key_never_reaches_the_sandbox_even_where_the_spec_passes_its_variable_through(box: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key stays in `mcpspec run`: a spec that inherits the key's variable (by mistake or by a hostile
    change) gives the server nothing, since the launcher is started without it."""
    spec = write_spec(box, "keyenv", "      environment: {effects: []}")
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("env: {set: {PYTHONPATH: /opt/site}}", f"env: {{set: {{PYTHONPATH: /opt/site}}, inherit: [{KEY_ENV}]}}"), encoding="utf-8")
    monkeypatch.setenv(KEY_ENV, KEY)

    async def environment(client: Any) -> Any:
        return await client.call_tool("environment", {})

    seen = session(spec, "r1", environment, "--audit-key-env", KEY_ENV)
    assert not seen.is_error and "PYTHONPATH" in text_of(seen)  # the tool ran and showed its environment
    assert KEY not in text_of(seen) and KEY_ENV not in text_of(seen)
