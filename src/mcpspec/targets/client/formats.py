"""The config files of each MCP client, written by serialisers (json, tomli-w), never by hand.

Every server entry starts ``mcpspec run SPEC SERVER`` (or the server's service of the
compose file): the sandbox, the secrets and the MCP controls are `mcpspec run`'s (or the
compose file's), so an entry holds no value of the spec but paths and names, and never a secret.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import tomli_w

# The names each client accepts for a server (Codex and Claude Code take letters, digits, '_' and '-').
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
# Claude Code's permission rules name a tool mcp__<server>__<tool>, in the characters of a model's tool name.
_RULE_TOOL = re.compile(r"^[A-Za-z0-9_-]+\Z")


@dataclass(frozen=True, slots=True)
class Entry:
    """One server as a client starts it."""

    name: str
    args: tuple[str, ...]
    command: str = "mcpspec"  # on the PATH the client starts servers with
    env: tuple[tuple[str, str], ...] = ()  # variables the entry sets (never a secret: the compose run directory)
    allow: tuple[str, ...] = ()  # tools no person approves (the spec says so)
    ask: tuple[str, ...] = ()  # tools a person approves at every call
    listed: tuple[str, ...] | None = None  # the only tools `mcpspec run` lets through (None: unlisted tools pass too)
    cwd: str | None = None  # the working directory the client starts it in (VS Code under its sandbox)
    # VS Code's sandbox block (one per mcp.json, the same for every entry that has one): the entry sets sandboxEnabled
    sandbox: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True)
class Client:
    name: str
    files: Callable[[list[Entry]], dict[str, str]]
    approvals: bool  # whether the files can say which tools need a person's approval
    where: str  # where the client reads the files (README)
    # The client expands ${...} in command and args (Claude Code ${VAR}, VS Code and Cursor ${env:X}, ${workspaceFolder}):
    # such text in a path would not reach `mcpspec run` as written, and no escape for it is documented.
    expands: bool = False


def valid_server_name(name: str) -> bool:
    return bool(_SERVER_NAME.match(name))


def rule_tool(tool: str) -> bool:
    return bool(_RULE_TOOL.match(tool))


def _json(data: Mapping[str, object]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _stdio(entry: Entry, typed: bool) -> dict[str, object]:
    server: dict[str, object] = {"type": "stdio"} if typed else {}
    server.update({"command": entry.command, "args": list(entry.args)})
    if entry.env:
        server["env"] = dict(entry.env)
    if entry.cwd is not None:
        server["cwd"] = entry.cwd
    if entry.sandbox is not None:
        server["sandboxEnabled"] = True
    return server


def _claude_desktop(entries: list[Entry]) -> dict[str, str]:
    return {"claude_desktop_config.json": _json({"mcpServers": {e.name: _stdio(e, False) for e in entries}})}


def _claude_code(entries: list[Entry]) -> dict[str, str]:
    allow = [f"mcp__{e.name}__{tool}" for e in entries for tool in e.allow if rule_tool(tool)]
    ask = [f"mcp__{e.name}__{tool}" for e in entries for tool in e.ask if rule_tool(tool)]
    return {
        ".mcp.json": _json({"mcpServers": {e.name: _stdio(e, True) for e in entries}}),
        ".claude/settings.json": _json({"permissions": {"allow": allow, "ask": ask}}),
    }


def _vscode(entries: list[Entry]) -> dict[str, str]:
    config: dict[str, object] = {"servers": {e.name: _stdio(e, True) for e in entries}}
    blocks = [e.sandbox for e in entries if e.sandbox is not None]
    if blocks:
        if any(block != blocks[0] for block in blocks):  # the target refuses this before: never one server's block for another
            raise ValueError("VS Code has one sandbox block per mcp.json: the entries need different ones")
        config["sandbox"] = blocks[0]
    return {".vscode/mcp.json": _json(config)}


def _cursor(entries: list[Entry]) -> dict[str, str]:
    return {".cursor/mcp.json": _json({"mcpServers": {e.name: _stdio(e, False) for e in entries}})}


def _codex(entries: list[Entry]) -> dict[str, str]:
    servers: dict[str, object] = {}
    for e in entries:
        server: dict[str, object] = {"command": e.command, "args": list(e.args)}
        if e.env:
            server["env"] = dict(e.env)
        if e.listed is not None:
            server["enabled_tools"] = list(e.listed)
        servers[e.name] = server
    return {".codex/config.toml": tomli_w.dumps({"mcp_servers": servers})}


CLIENTS: dict[str, Client] = {
    "claude-desktop": Client("claude-desktop", _claude_desktop, False,
                             "`claude_desktop_config.json` in Claude's config directory (merge `mcpServers` into yours)"),
    "claude-code": Client("claude-code", _claude_code, True,
                          "`.mcp.json` at the project root, and `.claude/settings.json` (its `permissions`: merge into yours)", expands=True),
    "vscode": Client("vscode", _vscode, False, "`.vscode/mcp.json` in the workspace", expands=True),
    "cursor": Client("cursor", _cursor, False, "`.cursor/mcp.json` in the project (or `~/.cursor/mcp.json`)", expands=True),
    "codex": Client("codex", _codex, False, "`.codex/config.toml` of a trusted project (or `~/.codex/config.toml`)"),
}
