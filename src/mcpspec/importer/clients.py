"""The ten client formats, each read into ``ImportedServer`` entries, and ``--from auto``.

Keys per client (see docs/import.md): claude-desktop and cursor ``mcpServers``; claude-code
``mcpServers`` with ``type`` and ``headers`` (also ``projects.<dir>.mcpServers`` of
``~/.claude.json``); vscode ``servers`` and ``inputs`` (or ``mcp.servers`` of settings.json);
windsurf ``serverUrl``; codex ``[mcp_servers.<name>]``; gemini ``httpUrl``, ``trust``,
``includeTools``/``excludeTools``; zed ``context_servers``; cline ``autoApprove``,
``alwaysAllow``, ``disabled``; continue a YAML list under ``mcpServers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mcpspec.importer.model import ImportedConfig, ImportedServer, Input, Pointer
from mcpspec.importer.reading import ImportFailure, parse, read_text, syntax_of

CLIENTS = ("claude-desktop", "claude-code", "vscode", "cursor", "windsurf", "codex", "gemini", "zed", "cline", "continue")


def load(path: Path, client: str) -> ImportedConfig:
    """Read ``path`` as ``client``'s config (``auto``: detect the client)."""
    if client != "auto" and client not in CLIENTS:
        raise ImportFailure(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}, or auto")
    text = read_text(path)
    name = str(path)
    syntax = syntax_of(path)
    if client == "codex":
        syntax = "toml"
    elif client == "continue" and syntax == "json":
        syntax = "yaml"  # config.yaml; a JSON file is YAML too
    data = parse(text, syntax, name)
    if client == "auto":
        client = detect(path, data)
    if not isinstance(data, dict):
        raise ImportFailure(f"{name}:1:1: a {client} config is a mapping at the top, not {type(data).__name__}")
    config = ImportedConfig(client, name, text)
    READERS[client](data, config)
    if not config.servers:
        raise ImportFailure(f"{name}:1:1: no MCP servers found under {_ROOTS[client]} (is this a {client} config?)")
    return config


def detect(path: Path, data: Any) -> str:
    """The client whose config ``path`` is, from its name, then its keys."""
    full = path.as_posix().lower()
    base = path.name.lower()
    if base.endswith(".toml"):
        return "codex"
    if base.endswith((".yaml", ".yml")):
        return "continue"
    by_name = [
        ("claude_desktop_config", "claude-desktop"), ("cline_mcp_settings", "cline"), ("/.cursor/", "cursor"), ("windsurf", "windsurf"),
        ("/.gemini/", "gemini"), ("/zed/", "zed"), ("/.zed/", "zed"), ("/.vscode/", "vscode"), ("/code/user/", "vscode"), (".claude.json", "claude-code"),
    ]
    for needle, client in by_name:
        if needle in f"/{full}":
            return client
    if isinstance(data, dict):
        if "context_servers" in data:
            return "zed"
        if "servers" in data or isinstance(data.get("mcp"), dict):
            return "vscode"
        if "projects" in data and "mcpServers" not in data:
            return "claude-code"
        entries = [entry for entry in _mapping(data.get("mcpServers")).values() if isinstance(entry, dict)]
        keys = {key for entry in entries for key in entry}
        if keys & {"serverUrl"}:
            return "windsurf"
        if keys & {"httpUrl", "trust", "includeTools", "excludeTools"}:
            return "gemini"
        if keys & {"autoApprove", "alwaysAllow", "disabled"}:
            return "cline"
        if keys & {"envFile"} or "${env:" in repr(entries):
            return "cursor"
        if keys & {"type", "headers"} or base == ".mcp.json":
            return "claude-code"
        if entries:
            return "claude-desktop"
    raise ImportFailure(f"{path}:1:1: cannot tell which client wrote this file: give --from {'|'.join(CLIENTS)}")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value if isinstance(item, (str, int, float))]
    if isinstance(value, str):
        return [value]
    return []


def _str_map(value: Any) -> dict[str, str]:
    return {str(key): str(item) for key, item in _mapping(value).items() if isinstance(item, (str, int, float, bool)) and item is not None}


def _common(name: str, pointer: Pointer, entry: Mapping[str, Any], url_keys: tuple[str, ...] = ("url",)) -> ImportedServer:
    """The fields most clients share: command, args, env, url, headers, type."""
    server = ImportedServer(name=name, pointer=pointer)
    command = entry.get("command")
    if isinstance(command, str) and command:
        server.command = [command, *_strings(entry.get("args"))]
    elif isinstance(command, list):
        server.command = [*_strings(command), *_strings(entry.get("args"))]
    server.env = _str_map(entry.get("env"))
    for key in url_keys:
        if isinstance(entry.get(key), str):
            server.url = entry[key]
            break
    server.headers = _str_map(entry.get("headers"))
    if isinstance(entry.get("apiKey"), str):  # continue's remote servers
        server.headers.setdefault("Authorization", f"Bearer {entry['apiKey']}")
    kind = str(entry.get("type") or entry.get("transport") or "").lower()
    if kind in ("http", "streamable-http", "streamablehttp", "streamable_http"):
        server.transport = "http"
    elif kind == "sse":
        server.transport = "sse"
    elif server.url and not server.command:
        server.transport = "sse" if server.url.rstrip("/").endswith("/sse") else "http"
    if isinstance(entry.get("envFile"), str):
        server.env_file = entry["envFile"]
    if isinstance(entry.get("cwd"), str):
        server.cwd = entry["cwd"]
    if entry.get("disabled") is True or entry.get("enabled") is False:
        server.enabled = False
    server.tools_deny = _strings(entry.get("disabledTools"))  # Roo Code's and Windsurf's deny list: it can only narrow
    return server


def _servers(block: Any, pointer: Pointer, config: ImportedConfig, reader: Callable[[str, Pointer, Mapping[str, Any]], ImportedServer], prefix: str = "") -> None:
    for name, entry in _mapping(block).items():
        if isinstance(entry, dict):
            config.servers.append(reader(prefix + str(name), (*pointer, str(name)), entry))


def _plain(name: str, pointer: Pointer, entry: Mapping[str, Any]) -> ImportedServer:
    return _common(name, pointer, entry)


def _claude_desktop(data: dict[str, Any], config: ImportedConfig) -> None:
    _servers(data.get("mcpServers"), ("mcpServers",), config, _plain)


def _claude_code(data: dict[str, Any], config: ImportedConfig) -> None:
    _servers(data.get("mcpServers"), ("mcpServers",), config, _plain)
    for project, settings in _mapping(data.get("projects")).items():
        if isinstance(settings, dict):
            label = Path(str(project)).name or "project"
            _servers(settings.get("mcpServers"), ("projects", str(project), "mcpServers"), config, _plain, prefix=f"{label}-")
    for key in ("enableAllProjectMcpServers", "enabledMcpjsonServers"):
        if data.get(key):
            config.notes.append(((key,), key))


def _vscode(data: dict[str, Any], config: ImportedConfig) -> None:
    root: Pointer = ("servers",)
    block = data.get("servers")
    inputs = data.get("inputs")
    if block is None and isinstance(data.get("mcp"), dict):
        root, block, inputs = ("mcp", "servers"), data["mcp"].get("servers"), data["mcp"].get("inputs")
    if block is None and isinstance(data.get("mcpServers"), dict):
        root, block = ("mcpServers",), data["mcpServers"]
    for item in inputs if isinstance(inputs, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            config.inputs[item["id"]] = Input(item["id"], str(item.get("description", "")), item.get("password") is True)
    _servers(block, root, config, _plain)
    if data.get("chat.mcp.autostart") not in (None, False, "never"):
        config.notes.append((("chat.mcp.autostart",), "chat.mcp.autostart"))


def _windsurf(data: dict[str, Any], config: ImportedConfig) -> None:
    def read(name: str, pointer: Pointer, entry: Mapping[str, Any]) -> ImportedServer:
        return _common(name, pointer, entry, url_keys=("serverUrl", "url"))

    _servers(data.get("mcpServers"), ("mcpServers",), config, read)


def _codex(data: dict[str, Any], config: ImportedConfig) -> None:
    def read(name: str, pointer: Pointer, entry: Mapping[str, Any]) -> ImportedServer:
        server = _common(name, pointer, {key: value for key, value in entry.items() if key != "headers"})
        server.env_passthrough = _strings(entry.get("env_vars"))
        server.headers = _str_map(entry.get("http_headers"))
        server.header_env = _str_map(entry.get("env_http_headers"))
        if isinstance(entry.get("bearer_token_env_var"), str):
            server.bearer_env = entry["bearer_token_env_var"]
        if "enabled_tools" in entry:
            server.tools_allow = _strings(entry.get("enabled_tools"))
        server.tools_deny += _strings(entry.get("disabled_tools"))
        return server

    _servers(data.get("mcp_servers"), ("mcp_servers",), config, read)


def _gemini(data: dict[str, Any], config: ImportedConfig) -> None:
    def read(name: str, pointer: Pointer, entry: Mapping[str, Any]) -> ImportedServer:
        server = _common(name, pointer, entry, url_keys=("httpUrl", "url"))
        if isinstance(entry.get("httpUrl"), str):
            server.transport = "http"
        elif isinstance(entry.get("url"), str) and not server.command:
            server.transport = "sse"
        if "includeTools" in entry:
            server.tools_allow = _strings(entry.get("includeTools"))
        server.tools_deny += _strings(entry.get("excludeTools"))
        if entry.get("trust") is True:
            server.trust_all, server.auto_approve_key = True, "trust"
        return server

    _servers(data.get("mcpServers"), ("mcpServers",), config, read)


def _zed(data: dict[str, Any], config: ImportedConfig) -> None:
    def read(name: str, pointer: Pointer, entry: Mapping[str, Any]) -> ImportedServer:
        command = entry.get("command")
        if isinstance(command, dict):  # the older form: command: {path, args, env}
            flat = {**entry, "command": command.get("path"), "args": command.get("args"), "env": command.get("env")}
            return _common(name, pointer, flat)
        return _common(name, pointer, entry)

    _servers(data.get("context_servers"), ("context_servers",), config, read)


def _cline(data: dict[str, Any], config: ImportedConfig) -> None:
    def read(name: str, pointer: Pointer, entry: Mapping[str, Any]) -> ImportedServer:
        server = _common(name, pointer, entry)
        for key in ("autoApprove", "alwaysAllow"):
            if _strings(entry.get(key)):
                server.auto_approve, server.auto_approve_key = _strings(entry.get(key)), key
        return server

    _servers(data.get("mcpServers"), ("mcpServers",), config, read)


def _continue(data: dict[str, Any], config: ImportedConfig) -> None:
    block = data.get("mcpServers")
    if isinstance(block, dict):
        _servers(block, ("mcpServers",), config, _plain)
        return
    for index, entry in enumerate(block if isinstance(block, list) else []):
        if isinstance(entry, dict):
            name = str(entry.get("name") or f"server-{index + 1}")
            config.servers.append(_common(name, ("mcpServers", index, "name"), entry))


READERS: dict[str, Callable[[dict[str, Any], ImportedConfig], None]] = {
    "claude-desktop": _claude_desktop,
    "claude-code": _claude_code,
    "vscode": _vscode,
    "cursor": _claude_desktop,
    "windsurf": _windsurf,
    "codex": _codex,
    "gemini": _gemini,
    "zed": _zed,
    "cline": _cline,
    "continue": _continue,
}
_ROOTS = {
    "claude-desktop": "mcpServers", "claude-code": "mcpServers", "vscode": "servers", "cursor": "mcpServers", "windsurf": "mcpServers",
    "codex": "[mcp_servers.<name>]", "gemini": "mcpServers", "zed": "context_servers", "cline": "mcpServers", "continue": "mcpServers",
}
