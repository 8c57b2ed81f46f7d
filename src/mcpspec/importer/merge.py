"""``--into``: add the imported servers to an existing spec, keeping its comments and order.

Existing servers and secrets are never changed; an imported name that is taken gets a
suffix. The imported servers join the client's agent (created if missing), and the workspace
directories they mount are added when the spec lacks them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from mcpspec.importer.convert import Conversion, convert, description
from mcpspec.importer.findings import finding
from mcpspec.importer.model import ImportedConfig
from mcpspec.importer.reading import ImportFailure, read_text
from mcpspec.importer.spec_writer import _seq, agent_name, agents, workspace, yaml


def load_spec(path: Path) -> CommentedMap:
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    text = read_text(path)
    try:
        data = yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark is not None else "1:1"
        raise ImportFailure(f"{path}:{where}: not valid YAML: {exc.problem or exc.context}") from None
    except YAMLError as exc:
        raise ImportFailure(f"{path}:1:1: not valid YAML: {exc}") from None
    if not isinstance(data, CommentedMap) or not isinstance(data.get("servers", CommentedMap()), dict):
        raise ImportFailure(f"{path}:1:1: not an mcp-sandbox spec (a mapping with servers)")
    return data


def merge(spec: CommentedMap, config: ImportedConfig) -> Conversion:
    """Add ``config``'s servers to ``spec`` in place; the conversion (names and findings)."""
    servers = spec.get("servers")
    if not isinstance(servers, dict):
        servers = CommentedMap()
        spec["servers"] = servers
    secrets: Any = spec.get("secrets")
    known = {entry.get("description") for entry in servers.values() if isinstance(entry, dict)}
    again = [server for server in config.servers if description(config.client, server.name) in known]
    config.servers = [server for server in config.servers if server not in again]
    conversion = convert(config, set(servers), set(secrets) if isinstance(secrets, dict) else set())
    for server in again:
        conversion.findings.append(finding(config, "IM010", server.pointer, f"server {server.name!r} was imported before: the spec's entry is kept as it is"))
    for name, entry in conversion.servers.items():
        servers[name] = entry
    if conversion.secrets:
        if not isinstance(secrets, dict):
            secrets = CommentedMap()
            _insert_before(spec, "servers", "secrets", secrets)
        for name, entry in conversion.secrets.items():
            secrets.setdefault(name, entry)
    _join_agent(spec, config, conversion)
    _ensure_workspace(spec)
    return conversion


def _insert_before(spec: CommentedMap, before: str, key: str, value: Any) -> None:
    keys = list(spec)
    spec.insert(keys.index(before) if before in keys else len(keys), key, value)


def _join_agent(spec: CommentedMap, config: ImportedConfig, conversion: Conversion) -> None:
    if not conversion.agent_servers:
        return
    found: Any = spec.get("agents")
    if not isinstance(found, dict):
        _insert_before(spec, "secrets" if "secrets" in spec else "servers", "agents", agents(config, conversion))
        return
    name = agent_name(config.client)
    agent = found.get(name)
    if isinstance(agent, dict) and isinstance(agent.get("servers"), list):
        agent["servers"].extend(server for server in conversion.agent_servers if server not in agent["servers"])
    else:
        found[name] = CommentedMap([("description", f"The {config.client} client's agent."), ("servers", _seq(conversion.agent_servers))])


def _ensure_workspace(spec: CommentedMap) -> None:
    found: Any = spec.get("workspace")
    wanted = workspace()
    if not isinstance(found, dict):
        _insert_before(spec, "agents" if "agents" in spec else "servers", "workspace", wanted)
        return
    dirs = found.get("dirs")
    if not isinstance(dirs, CommentedMap):
        found["dirs"] = wanted["dirs"]
        return
    for name in ("input", "tmp"):
        if name not in dirs:
            dirs[name] = wanted["dirs"][name]
            dirs.yaml_add_eol_comment("added by mcpspec import: imported servers mount it", name)
