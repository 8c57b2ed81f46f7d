"""`mcpspec import`: every client format read, secrets never copied, findings, --into."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO

CLIENT_DIR = REPO / "tests" / "clients"
# file -> (client, server names as the client spells them)
FIXTURES = {
    "claude_desktop_config.json": ("claude-desktop", {"filesystem", "github", "postgres", "My Local Tool"}),
    "claude-code.mcp.json": ("claude-code", {"github", "sentry", "linear", "fetch"}),
    "vscode-mcp.json": ("vscode", {"github", "playwright", "db"}),
    "cursor-mcp.json": ("cursor", {"slack", "notion", "memory"}),
    "windsurf_mcp_config.json": ("windsurf", {"remote-docs", "github"}),
    "codex-config.toml": ("codex", {"github", "fetch", "db", "jira"}),
    "gemini-settings.json": ("gemini", {"github", "events", "git"}),
    "zed-settings.json": ("zed", {"postgres", "puppeteer"}),
    "cline_mcp_settings.json": ("cline", {"github", "brave-search"}),
    "continue-config.yaml": ("continue", {"SQLite", "GitHub", "Search API"}),
}
# Every fake credential of the fixtures: none may appear in any output.
TOKENS = [
    "ghp_FAKEdesktop0123456789abcdefghijklmnop", "FakePassw0rdDesktop", "lin_api_FAKEclaudecode0123456789abcdef", "xoxb-FAKE-cursor-0123456789-abcdefghij",
    "github_pat_FAKEwindsurf0123456789abcdefghijklmnopqrstu", "FakeCodexPassw0rd", "FAKEcodexJiraToken0123456789", "sk-proj-FAKEgemini0123456789abcdefghij",
    "FakeZedPassw0rd", "ghp_FAKEcline0123456789abcdefghijklmnopqr", "BSAfakeCline0123456789abcdefgh", "sk-FAKEcontinue0123456789abcdefghij",
]


def test_every_fixture_token_is_in_its_fixture() -> None:
    text = "".join(path.read_text(encoding="utf-8") for path in CLIENT_DIR.iterdir())
    assert all(token in text for token in TOKENS)


@pytest.mark.parametrize("file", sorted(FIXTURES))
def test_every_client_format_is_read_with_every_server(file: str) -> None:
    from mcpspec.importer.clients import load

    client, names = FIXTURES[file]
    assert load(CLIENT_DIR / file, client).client == client
    detected = load(CLIENT_DIR / file, "auto")
    assert detected.client == client
    assert {server.name for server in detected.servers} == names


def test_fields_of_each_format_land_in_the_model() -> None:
    from mcpspec.importer.clients import load

    codex = {s.name: s for s in load(CLIENT_DIR / "codex-config.toml", "auto").servers}
    assert codex["github"].bearer_env == "GITHUB_PAT" and codex["github"].tools_allow == ["get_issue", "list_pull_requests"]
    assert codex["fetch"].env == {"USER_AGENT": "codex-fetch"} and codex["fetch"].env_passthrough == ["HTTPS_PROXY"]
    assert not codex["db"].enabled and codex["db"].tools_deny == ["query"]
    assert codex["jira"].header_env == {"X-Tenant": "JIRA_TENANT"} and codex["jira"].transport == "http"
    vscode = load(CLIENT_DIR / "vscode-mcp.json", "vscode")
    assert vscode.inputs["github-token"].password
    assert {s.name: s.transport for s in vscode.servers} == {"github": "http", "playwright": "stdio", "db": "stdio"}
    assert vscode.servers[2].env_file == "${workspaceFolder}/.env"
    gemini = {s.name: s for s in load(CLIENT_DIR / "gemini-settings.json", "gemini").servers}
    assert gemini["github"].trust_all and gemini["github"].transport == "http" and gemini["events"].transport == "sse"
    assert gemini["git"].cwd == "./repo" and gemini["events"].tools_deny == ["delete_event"]
    zed = {s.name: s for s in load(CLIENT_DIR / "zed-settings.json", "zed").servers}
    assert zed["postgres"].command == ["npx", "-y", "@modelcontextprotocol/server-postgres"] and "DATABASE_URL" in zed["postgres"].env
    cline = {s.name: s for s in load(CLIENT_DIR / "cline_mcp_settings.json", "cline").servers}
    assert cline["github"].auto_approve == ["create_issue", "push_files"] and not cline["brave-search"].enabled
    windsurf = {s.name: s for s in load(CLIENT_DIR / "windsurf_mcp_config.json", "windsurf").servers}
    assert windsurf["remote-docs"].url == "https://docs-mcp.example.com/mcp"
    continued = {s.name: s for s in load(CLIENT_DIR / "continue-config.yaml", "continue").servers}
    assert continued["Search API"].transport == "http" and "Authorization" in continued["Search API"].headers


def test_references_are_told_from_literal_secrets() -> None:
    from mcpspec.importer.references import Reference, literal_secret, references, secret_argument

    assert references("Bearer ${input:github-token}") == [Reference("input", "github-token")]
    assert references("${env:X} ${Y:-d} $Z ${{ secrets.W }} ${workspaceFolder}") == [Reference("env", n) for n in "XYZW"]
    assert literal_secret("GITHUB_TOKEN", "ghp_" + "a" * 30) and literal_secret("API_PASSWORD", "hunter2hunter2")
    assert not literal_secret("GITHUB_TOKEN", "${GITHUB_TOKEN}") and not literal_secret("Authorization", "Bearer ${env:T}")
    assert not literal_secret("LOG_LEVEL", "debug")
    assert secret_argument(None, "postgresql://u:pw@h/db") and secret_argument("--token", "abcdefgh123")
    assert not secret_argument(None, "--verbose") and not secret_argument("--repository", ".")


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [("bad.json", '{\n  "mcpServers": {\n    "a": [}\n', ":3:"), ("bad.toml", "[mcp_servers.a]\ncommand = \n", ":2:"), ("bad.yaml", "mcpServers:\n  - name: [\n", ":")],
)
def test_bad_input_is_one_clear_error_with_its_position(tmp_path: Path, name: str, text: str, where: str) -> None:
    from mcpspec.importer.clients import load
    from mcpspec.importer.reading import ImportFailure

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ImportFailure) as caught:
        load(path, "auto")
    assert str(caught.value).startswith(f"{path}{where}")


def test_a_file_without_servers_or_of_unknown_shape_is_refused(tmp_path: Path) -> None:
    from mcpspec.importer.clients import load
    from mcpspec.importer.reading import ImportFailure

    (tmp_path / "empty.json").write_text('{"mcpServers": {}}', encoding="utf-8")
    with pytest.raises(ImportFailure, match="no MCP servers"):
        load(tmp_path / "empty.json", "claude-desktop")
    (tmp_path / "other.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(ImportFailure, match="cannot tell which client"):
        load(tmp_path / "other.json", "auto")
    with pytest.raises(ImportFailure, match="unknown client"):
        load(tmp_path / "other.json", "emacs")
