"""The client target end to end: `mcpspec build --target client` writes a client's config, and the
server entry in it, started as the client would start it (its command and args, with `mcpspec`
found as `python -m mcpspec`), is `mcpspec run` serving the real probe server in its sandbox."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from test_run_relay_real import box, received, text_of, write_spec  # noqa: F401  (box is the fixture)

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import Sandbox


def _entry(client: str, out: Path) -> dict[str, Any]:
    if client == "codex":
        return dict(tomllib.loads((out / ".codex" / "config.toml").read_text(encoding="utf-8"))["mcp_servers"]["probe"])
    data = json.loads((out / ".mcp.json").read_text(encoding="utf-8"))
    return dict(data["mcpServers"]["probe"])


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_the_emitted_entry_starts_the_sandboxed_server_through_mcpspec_run(box: Sandbox, client: str) -> None:  # noqa: F811
    name = f"client-{client}"
    spec = write_spec(box, name, "      echo: {effects: []}")
    out = box.base / f"out-{client}"
    done = run_cli("build", str(spec), "--target", "client", "--client", client, "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    entry = _entry(client, out)
    assert entry["command"] == "mcpspec" and entry["args"][:3] == ["run", str(spec), "probe"]

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def run() -> Any:
        # As the client starts it, with `mcpspec` being this checkout's; the run id picks the workspace.
        params = StdioServerParameters(command=sys.executable, args=["-m", "mcpspec", *entry["args"], "--run-id", "c1"], env=dict(os.environ))
        with open(spec.with_suffix(".stderr"), "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                called = await session.call_tool("echo", {"text": "via the client config"})
                return [tool.name for tool in listed.tools], called

    try:
        names, called = asyncio.run(asyncio.wait_for(run(), 120))
    except BaseException as exc:
        said = spec.with_suffix(".stderr").read_text(encoding="utf-8", errors="replace")[-3000:]
        raise AssertionError(f"the session failed; mcpspec run said:\n{said}") from exc
    assert names == ["echo"]  # the allowlist of `mcpspec run`, not the server's whole list
    assert not called.is_error and json.loads(text_of(called)) == {"ok": True, "text": "via the client config"}
    assert received(box, name, "c1") == ["echo"]  # it ran inside the sandbox, in the run's workspace
