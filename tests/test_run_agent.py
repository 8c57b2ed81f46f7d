"""The agent endpoint's naming and merging, without processes (tests/test_run_agent_real.py runs it for real)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcpspec.run.endpoint import merged_hello
from mcpspec.run.names import collisions, exposed
from mcpspec.run.revisions import SERVER_INFO_KEY


def test_a_shared_name_is_prefixed_on_every_server_and_the_real_name_kept() -> None:
    shown, left_out = exposed({"a": ["echo", "identity"], "b": ["echo", "pause"]})
    assert shown == {"identity": ("a", "identity"), "pause": ("b", "pause"), "a__echo": ("a", "echo"), "b__echo": ("b", "echo")}
    assert left_out == []
    assert collisions({"a": ["echo"], "b": ["echo"], "c": ["echo", "x"]}) == {"echo": ["a", "b", "c"]}


def test_a_prefixed_name_that_is_another_servers_tool_is_left_out_not_shadowed() -> None:
    shown, left_out = exposed({"a": ["send"], "b": ["send", "a__send"]})
    assert shown["a__send"] == ("b", "a__send") and shown["b__send"] == ("b", "send")
    assert left_out == ["a__send"]  # a's send is not reachable under b's name


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
