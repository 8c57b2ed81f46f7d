"""One model of an MCP server, whatever client config it came from."""

from __future__ import annotations

from dataclasses import dataclass, field

Pointer = tuple[str | int, ...]


@dataclass(frozen=True)
class Input:
    """A VS Code ``inputs`` entry: a value the client prompts for."""

    id: str
    description: str = ""
    password: bool = False


@dataclass
class ImportedServer:
    """One server as the client declares it. Values are the client's raw strings (they may
    hold literal secrets or interpolations); nothing here is written out as it is."""

    name: str
    pointer: Pointer
    transport: str = "stdio"  # stdio | http | sse
    command: list[str] = field(default_factory=list)
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    env_file: str | None = None
    env_passthrough: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    header_env: dict[str, str] = field(default_factory=dict)  # header -> env var name (codex env_http_headers)
    bearer_env: str | None = None
    cwd: str | None = None
    tools_allow: list[str] | None = None
    tools_deny: list[str] = field(default_factory=list)
    auto_approve: list[str] = field(default_factory=list)  # tools approved without asking; "*" is all
    auto_approve_key: str = ""
    trust_all: bool = False
    enabled: bool = True


@dataclass
class ImportedConfig:
    """Everything read from one client config file."""

    client: str
    path: str
    text: str
    servers: list[ImportedServer] = field(default_factory=list)
    inputs: dict[str, Input] = field(default_factory=dict)
    notes: list[tuple[Pointer, str]] = field(default_factory=list)  # approval-state settings seen
