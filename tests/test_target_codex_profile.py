"""The codex-profile target's files: what each profile and entry says, what is refused, and that every
string reaches Codex exactly as the spec wrote it (tomllib reads back the same value; no value adds a key)."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from typing import Any

import pytest

from mcpspec.api import load_text
from mcpspec.targets.build import build_plan

HEAD = """version: 1
project: acme
servers:
"""


def _build(servers: str, extra: str = "") -> tuple[dict[str, Any], list[tuple[str, str, tuple[str | int, ...]]]]:
    build = build_plan(load_text(extra + HEAD + servers, "codex.yaml"), "codex-profile")
    config = tomllib.loads(build.files.get("codex-config.toml", "")) if "codex-config.toml" in build.files else {}
    return config, [(r.code, r.message, r.path) for r in build.results]


def test_a_hostile_path_and_argument_reach_codex_as_written() -> None:
    path = '/srv/a "quoted" = \\back\\slash #not-a-comment'
    word = 'x"]\n[permissions.evil.network]\nenabled = true\n#'
    config, _ = _build(f"""  s:
    command: [/usr/bin/srv, {json.dumps(word)}]
    mounts: [{{from: {json.dumps(path)}, to: {json.dumps(path)}, mode: rw}}]
""")
    assert set(config["permissions"]) == {"mcpspec-s"}
    assert config["permissions"]["mcpspec-s"]["network"] == {"enabled": False}
    assert config["permissions"]["mcpspec-s"]["filesystem"][path] == "write"
    assert config["mcp_servers"]["s"]["args"][-1] == word


@pytest.mark.parametrize(("mount", "why"), [
    ("/srv/data/*", "glob"), ("/srv/da?a", "glob"), ("/srv/[ab]", "glob"), ("/srv/{a,b}", "glob"), ("~", "whole home"),
])
def test_a_path_codex_would_read_otherwise_is_refused(mount: str, why: str) -> None:
    config, results = _build(f"""  s:
    command: [/usr/bin/srv]
    mounts: [{{from: "{mount}", to: /data}}]
""")
    refused = [r for r in results if r[0] == "TG004"]
    assert refused and refused[0][2][:3] == ("servers", "s", "mounts"), (why, results)
    assert "mcp_servers" not in config or "s" not in config["mcp_servers"]


def test_http_servers_and_shell_strings_are_refused() -> None:
    config, results = _build("""  web:
    command: [/usr/bin/srv]
    transport: {type: http, port: 8080}
  sh:
    command: "srv && srv"
  ok:
    command: [/usr/bin/srv]
""")
    refused = {r[2][1] for r in results if r[0] == "TG004"}
    assert refused == {"web", "sh"}, results
    assert set(config["mcp_servers"]) == {"ok"}


def test_egress_is_never_granted_and_is_reported() -> None:
    config, results = _build("""  fetch:
    command: [/usr/bin/srv]
    egress: {default: deny, allow: ["docs.python.org:443", "10.1.2.0/24:5432"]}
""")
    assert config["permissions"]["mcpspec-fetch"]["network"] == {"enabled": False}
    assert any(code == "TG001" and "egress allowlist by name:" in message for code, message, _ in results), results


def test_an_allow_list_of_addresses_alone_is_reported_too() -> None:
    config, results = _build("""  db:
    command: [/usr/bin/srv]
    egress: {default: deny, allow: ["10.1.2.0/24:5432"]}
""")
    assert config["permissions"]["mcpspec-db"]["network"] == {"enabled": False}
    assert [path for code, message, path in results if code == "TG001" and "egress" in message] == [("servers", "db", "egress", "allow")], results


def test_secrets_are_never_written_and_each_is_reported_at_its_provider() -> None:
    config, results = _build("""  s:
    command: [/usr/bin/srv]
    secrets: [{use: tok, as: {env: TOKEN}}]
""", extra="secrets:\n  tok: {provider: env, ref: TOKEN_SOURCE}\n")
    assert "TOKEN" not in json.dumps(config)
    assert [(code, path) for code, _, path in results if code == "TG001" and "secret" in _] == [("TG001", ("secrets", "tok", "provider"))], results


def test_env_i_passes_the_named_variables_the_host_has_and_nothing_else() -> None:
    """The command inside the sandbox, run here as Codex would start it: only the spec's names get through."""
    config, _ = _build("""  s:
    command: [/usr/bin/env]
    env: {inherit: [KEEP, ABSENT], set: {SET: "a b $HOME 'q'"}}
""")
    entry = config["mcp_servers"]["s"]
    assert entry["env_vars"] == ["KEEP", "ABSENT"]
    inner = entry["args"][entry["args"].index("--") + 1:]
    inner = inner[inner.index("/bin/sh"):]  # past prlimit and timeout
    done = subprocess.run(inner, env={"KEEP": "kept", "OTHER": "leak", "HOME": "/root", "PATH": os.environ["PATH"]},
                          capture_output=True, text=True, timeout=30, check=True)
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert seen == {"KEEP": "kept", "SET": "a b $HOME 'q'", "PATH": "/usr/local/bin:/usr/bin:/bin"}, seen


def test_limits_start_the_server_under_prlimit_and_timeout() -> None:
    config, _ = _build("""  s:
    command: [/usr/bin/srv]
    runtime: {memory: 64Mi, pids: 16}
    lifecycle: {max_lifetime: 90s}
""")
    args = config["mcp_servers"]["s"]["args"]
    assert args[4:6] == ["/usr/bin/perl", "-e"]  # a fresh session keyring first
    assert args[7:15] == ["/usr/bin/prlimit", f"--as={64 * 2**20}", "--nproc=16", "--", "/usr/bin/timeout", "--kill-after=5", "90", "/usr/bin/env"]
