"""The built-in catalog: each entry speaks the spec's language, and lookup recognises the ways clients start servers."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from mcpspec import catalog
from mcpspec.spec.models import Effect, ServerKind
from mcpspec.spec.values import NAME_PATTERN, TOOL_NAME_PATTERN, TTL_PATTERN, parse_destination

REQUIRED = {"filesystem", "git", "github", "fetch", "postgres", "playwright", "puppeteer", "slack", "memory"}
ENTRIES = catalog.entries()
IDS = [entry.name for entry in ENTRIES]


def test_catalog_has_the_well_known_servers() -> None:
    assert set(IDS) >= REQUIRED
    assert len(IDS) == len(set(IDS))


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_entry_speaks_the_spec_language(entry: catalog.Entry) -> None:
    assert re.fullmatch(NAME_PATTERN, entry.name)
    assert entry.kind in get_args(ServerKind)
    assert re.fullmatch(r"v?[0-9][0-9A-Za-z.+-]*", entry.version), "a pin, not a range or 'latest'"
    assert entry.tools, "every entry names its tools"
    names = [tool.name for tool in entry.tools]
    assert len(names) == len(set(names))
    for tool in entry.tools:
        assert re.fullmatch(TOOL_NAME_PATTERN, tool.name)
        assert tool.effects, f"{tool.name}: effects declared"
        assert set(tool.effects) <= {*get_args(Effect), "none"}
        assert "none" not in tool.effects or len(tool.effects) == 1
        if {"external_send", "deploy", "destructive", "modify_access"} & set(tool.effects):
            assert tool.approval == "always", f"{tool.name} sends, deploys or destroys: approval always"
    for destination in entry.egress:
        assert parse_destination(destination).port is not None
    for mount in entry.mounts:
        assert mount.source.startswith("workspace."), "never a host path"
    assert entry.command[0] not in {"npx", "uvx", "pipx", "docker"}, "the sandbox runs the installed program, no download at start"


@pytest.mark.parametrize("entry", [entry for entry in ENTRIES if entry.credential is not None], ids=lambda entry: entry.name)
def test_credential_is_least_privilege_shaped(entry: catalog.Entry) -> None:
    credential = entry.credential
    assert credential is not None
    assert re.fullmatch(NAME_PATTERN, credential.secret)
    assert re.fullmatch(r"[A-Z_][A-Z0-9_]*", credential.env)
    assert re.fullmatch(TTL_PATTERN, credential.ttl)
    assert credential.scopes == "none" or credential.scopes
    assert "repo" not in credential.scopes, "never GitHub's classic all-repositories scope"
    assert credential.advice
    assert entry.egress, "a server with a credential reaches a service"


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_lookup_recognises_its_own_launch_and_aliases(entry: catalog.Entry) -> None:
    assert catalog.lookup(entry.launch) is entry
    assert catalog.lookup(" ".join(entry.launch)) is entry
    assert catalog.lookup([entry.package.name]) is entry
    assert catalog.lookup(list(entry.command)) is entry
    for alias in entry.aliases:
        assert catalog.lookup(["docker", "run", "-i", "--rm", alias]) is entry
    assert catalog.get(entry.name) is entry


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["npx", "-y", "@modelcontextprotocol/server-github"], "github-reference"),
        (["docker", "run", "-i", "--rm", "mcp/github"], "github-reference"),
        (["github-mcp-server", "stdio"], "github"),
        (["npx", "--yes", "@modelcontextprotocol/server-filesystem@latest", "/home/me/project"], "filesystem"),
        ("npx -y @modelcontextprotocol/server-postgres postgresql://localhost/app", "postgres"),
        (["cmd", "/c", "npx", "-y", "@modelcontextprotocol/server-memory"], "memory"),
        (["pnpm", "dlx", "@playwright/mcp@0.0.40", "--isolated"], "playwright"),
        (["bunx", "@modelcontextprotocol/server-slack"], "slack"),
        ("uvx mcp-server-fetch", "fetch"),
        (["uvx", "mcp-server-git==2026.1.14", "--repository", "."], "git"),
        (["uvx", "--from", "mcp-server-git", "mcp-server-git"], "git"),
        (["pipx", "run", "mcp-server-fetch"], "fetch"),
        (["python", "-m", "mcp_server_git", "--repository", "."], "git"),
        (["docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"], "github"),
        (["docker", "run", "-i", "--rm", "ghcr.io/github/github-mcp-server:v0.20.1"], "github"),
        (["docker", "run", "-i", "--rm", "--mount", "type=bind,src=/x,dst=/projects/x", "mcp/filesystem", "/projects"], "filesystem"),
        (["podman", "run", "-i", "docker.io/mcp/fetch@sha256:" + "a" * 64], "fetch"),
        (["node", "/home/me/.npm/_npx/1/node_modules/@modelcontextprotocol/server-puppeteer/dist/index.js"], "puppeteer"),
        (r"node C:\Users\me\node_modules\@modelcontextprotocol\server-filesystem\dist\index.js C:\code", "filesystem"),
        ("https://api.githubcopilot.com/mcp/", "github"),
        ("https://api.githubcopilot.com/mcp/x/issues", "github"),
        (["npx", "-y", "mcp-remote", "https://api.githubcopilot.com/mcp/"], "github"),
    ],
)
def test_lookup_recognises_how_clients_start_servers(command: list[str] | str, name: str) -> None:
    entry = catalog.lookup(command)
    assert entry is not None and entry.name == name


@pytest.mark.parametrize(
    "command",
    [
        ["npx", "-y", "@acme/mcp-server-internal"],
        ["uvx", "mcp-server-gitlab"],
        ["git", "log"],
        ["python", "-m", "http.server"],
        ["docker", "run", "-i", "ghcr.io/acme/fetcher"],
        ["node", "server.js", "--memory", "fetch"],
        "https://api.githubcopilot.com.evil.example/mcp",
        "https://mcp.acme.example/mcp",
        [],
        "",
        "npx 'unterminated",
    ],
)
def test_lookup_does_not_guess(command: list[str] | str) -> None:
    assert catalog.lookup(command) is None
