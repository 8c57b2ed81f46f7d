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


def _import_cli(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "mcpspec", "import", *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("file", sorted(FIXTURES))
def test_imported_spec_is_valid_holds_every_server_and_no_token(file: str, tmp_path: Path) -> None:
    import yaml

    from mcpspec import api
    from mcpspec.importer.references import spec_name

    out = tmp_path / "mcp-sandbox.yaml"
    status, stdout, stderr = _import_cli("--from", "auto", str(CLIENT_DIR / file), "-o", str(out), "--project", "demo")
    assert status == 0, stderr
    text = out.read_text(encoding="utf-8")
    for token in TOKENS:
        assert token not in text and token not in stdout and token not in stderr, f"{token} leaked"
    data = yaml.safe_load(text)
    assert set(data["servers"]) == {spec_name(name) for name in FIXTURES[file][1]}
    assert "REVIEW" in text
    run = api.lint_files([out])
    errors = [r for item in run.report.files for r in item.results if r.severity == "error"]
    assert errors == [], [(r.code, r.message) for r in errors]
    for item in run.report.files:
        for result in item.results:
            assert all(token not in result.message for token in TOKENS)


def test_literal_secrets_become_env_secrets_and_a_finding_to_rotate(tmp_path: Path) -> None:
    import yaml

    status, stdout, stderr = _import_cli("--from", "claude-desktop", str(CLIENT_DIR / "claude_desktop_config.json"), "--project", "demo")
    assert status == 0
    spec = yaml.safe_load(stdout)
    secret = spec["secrets"]["github-personal-access-token"]
    assert {k: secret[k] for k in ("provider", "ref", "description")} == {
        "provider": "env", "ref": "GITHUB_PERSONAL_ACCESS_TOKEN", "description": "env GITHUB_PERSONAL_ACCESS_TOKEN of the claude-desktop server 'github'."
    }
    assert "repo" not in secret["scopes"] and secret["ttl"], "the catalog's least-privilege shape, marked for review"
    assert {"use": "github-personal-access-token", "as": {"env": "GITHUB_PERSONAL_ACCESS_TOKEN"}} in spec["servers"]["github"]["secrets"]
    assert "${POSTGRES_ARG_3}" in spec["servers"]["postgres"]["command"]
    lines = stderr.splitlines()
    assert any(line.startswith(f"{CLIENT_DIR / 'claude_desktop_config.json'}:10:") and "IM001 [critical] literal-secret" in line and "rotate" in line for line in lines), stderr
    assert spec["servers"]["my-local-tool"]["env"]["set"] == {"LOG_LEVEL": "debug"}
    assert "IM004 [medium] unknown-binary" in stderr and "TODO" in stdout


def test_references_become_secrets_and_remote_servers_are_external() -> None:
    import yaml

    _, stdout, stderr = _import_cli("--from", "vscode", str(CLIENT_DIR / "vscode-mcp.json"), "--project", "demo")
    spec = yaml.safe_load(stdout)
    assert spec["secrets"]["github-token"]["ref"] == "GITHUB_TOKEN" and "input github-token" in spec["secrets"]["github-token"]["description"]
    assert spec["servers"]["github"]["placement"] == "external"
    assert spec["servers"]["github"]["transport"] == {"type": "http", "url": "https://api.githubcopilot.example/mcp/", "auth": {"type": "bearer"}}
    assert {"use": "sqlite-key", "as": {"env": "SQLITE_KEY"}} in spec["servers"]["db"]["secrets"]
    assert "/workspace/input/data/app.db" in spec["servers"]["db"]["command"]
    assert "IM003 [medium] not-sandboxed" in stderr and "IM006 [low] env-file-not-read" in stderr
    _, stdout, _ = _import_cli("--from", "claude-code", str(CLIENT_DIR / "claude-code.mcp.json"), "--project", "demo")
    spec = yaml.safe_load(stdout)
    assert spec["secrets"]["github-token"]["ref"] == "GITHUB_TOKEN"
    assert spec["servers"]["fetch"]["package"] == {"registry": "pypi", "name": "mcp-server-fetch", "version": "2025.4.7"}
    assert spec["servers"]["linear"]["transport"]["type"] == "sse"


def test_approval_bypasses_are_findings_naming_the_tools_and_the_tools_need_approval() -> None:
    import yaml

    _, stdout, stderr = _import_cli("--from", "cline", str(CLIENT_DIR / "cline_mcp_settings.json"), "--project", "demo")
    spec = yaml.safe_load(stdout)
    bypass = [line for line in stderr.splitlines() if "IM002 [high] approval-bypass" in line]
    assert any("create_issue, push_files" in line and "autoApprove" in line for line in bypass), stderr
    assert any("brave_web_search" in line and "alwaysAllow" in line for line in bypass)
    assert spec["servers"]["github"]["tools"]["push_files"] == {"effects": ["external_send"], "approval": "always"}  # effects from the catalog
    assert spec["agents"]["cline"]["servers"] == ["github"] and "brave-search" in spec["servers"]
    assert "IM005 [info] disabled-server" in stderr
    _, stdout, stderr = _import_cli("--from", "gemini", str(CLIENT_DIR / "gemini-settings.json"), "--project", "demo")
    assert any("trust let tools get_issue, search_issues" in line for line in stderr.splitlines()), stderr
    assert any("trust let every tool of server 'git'" in line for line in stderr.splitlines()), stderr


def test_bad_input_exits_2_with_a_position_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "mcp.json"
    bad.write_text('{"servers": {"a": {"command": "x",}, }\n  oops', encoding="utf-8")
    status, stdout, stderr = _import_cli("--from", "auto", str(bad))
    assert status == 2 and stdout == "" and "Traceback" not in stderr
    assert stderr.startswith(f"mcpspec: error: {bad}:2:")
    status, _, stderr = _import_cli("--from", "auto", str(tmp_path / "missing.json"))
    assert status == 2 and "no such file" in stderr
    existing = tmp_path / "out.yaml"
    existing.write_text("keep\n", encoding="utf-8")
    status, _, stderr = _import_cli("--from", "auto", str(CLIENT_DIR / "zed-settings.json"), "-o", str(existing))
    assert status == 2 and "--force" in stderr and existing.read_text(encoding="utf-8") == "keep\n"


def test_into_adds_servers_keeping_comments_order_and_existing_entries(tmp_path: Path) -> None:
    import yaml

    from mcpspec import api

    spec = tmp_path / "mcp-sandbox.yaml"
    original = (REPO / "examples" / "coding-agent.yaml").read_text(encoding="utf-8")
    original = original.replace("  docs:\n", "  github:\n", 1).replace("servers: [repo, docs]", "servers: [repo, github]")
    spec.write_text(original, encoding="utf-8")
    status, stdout, stderr = _import_cli("--from", "auto", str(CLIENT_DIR / "claude_desktop_config.json"), "--into", str(spec))
    assert status == 0, stderr
    assert stdout == ""
    merged = spec.read_text(encoding="utf-8")
    assert all(token not in merged + stderr for token in TOKENS)
    for line in original.splitlines():
        if "#" in line:
            assert line.split("#", 1)[1] in merged, f"comment lost: {line}"
    before, after = yaml.safe_load(original), yaml.safe_load(merged)
    assert list(after)[: len(before)] == list(before) or [k for k in after if k in before] == list(before)
    assert after["servers"]["github"] == before["servers"]["github"], "an existing server changed"
    assert after["servers"]["repo"] == before["servers"]["repo"]
    assert {"github-2", "filesystem", "postgres", "my-local-tool"} <= set(after["servers"])
    assert after["agents"]["coder"] == before["agents"]["coder"]
    assert after["agents"]["claude-desktop"]["servers"] == ["filesystem", "github-2", "postgres", "my-local-tool"]
    run = api.lint_files([spec])
    errors = [r for item in run.report.files for r in item.results if r.severity == "error"]
    assert errors == [], [(r.code, r.message) for r in errors]


def test_into_a_spec_without_workspace_or_secrets_adds_them(tmp_path: Path) -> None:
    import yaml

    from mcpspec import api

    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text("# my servers\nversion: 1\nproject: tiny\nservers:\n  echo:  # keep me\n    command: [echo]\n", encoding="utf-8")
    out = tmp_path / "merged.yaml"
    status, _, stderr = _import_cli("--from", "codex", str(CLIENT_DIR / "codex-config.toml"), "--into", str(spec), "-o", str(out))
    assert status == 0, stderr
    assert spec.read_text(encoding="utf-8").endswith("command: [echo]\n"), "--into with -o must not change SPEC"
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# my servers\n") and "# keep me" in text
    data = yaml.safe_load(text)
    assert list(data) == ["version", "project", "workspace", "agents", "secrets", "servers"]
    assert next(iter(data["servers"])) == "echo" and {"github", "fetch", "db", "jira"} <= set(data["servers"])
    assert data["agents"]["codex"]["servers"] == ["github", "fetch", "jira"]
    errors = [r for item in api.lint_files([out]).report.files for r in item.results if r.severity == "error"]
    assert errors == [], [(r.code, r.message) for r in errors]
    status, _, stderr = _import_cli("--from", "codex", str(CLIENT_DIR / "codex-config.toml"), "--into", str(tmp_path / "none.yaml"))
    assert status == 2 and "no such file" in stderr


def test_docs_name_every_client_and_finding() -> None:
    from mcpspec.importer.clients import CLIENTS
    from mcpspec.importer.findings import CODES

    docs = (REPO / "docs" / "import.md").read_text(encoding="utf-8")
    assert all(f"| `{client}` |" in docs for client in CLIENTS)
    assert all(f"| {code} | {severity} | {slug} |" in docs for code, (severity, slug) in CODES.items())
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "## Importing a client's config" in readme and "`mcpspec import --from CLIENT PATH`" in readme


def test_other_shapes_claude_json_projects_vscode_settings_bridges_and_urls(tmp_path: Path) -> None:
    import json

    import yaml

    home = tmp_path / "home"
    home.mkdir()
    claude = home / ".claude.json"
    claude.write_text(json.dumps({
        "numStartups": 3,
        "projects": {"/srv/src/webapp": {"mcpServers": {"notes": {"command": "uvx", "args": ["notes-mcp==1.2.0"]}}}},
        "mcpServers": {"remote": {"command": "npx", "args": ["mcp-remote", "https://mcp.example.com/sse", "--header", "Authorization: Bearer FAKEbridgeToken0123456789"]}},
    }), encoding="utf-8")
    status, stdout, stderr = _import_cli("--from", "auto", str(claude), "--project", "demo")
    assert status == 0, stderr
    assert "FAKEbridgeToken0123456789" not in stdout + stderr
    spec = yaml.safe_load(stdout)
    assert set(spec["servers"]) == {"remote", "webapp-notes"} and "claude-code" in spec["agents"]
    assert "IM001 [critical]" in stderr
    settings = tmp_path / "settings.json"
    settings.write_text('{"editor.fontSize": 14, "mcp": {"servers": {"hook": {"type": "http", "url": "https://hooks.example.com/T0/xoxb-FAKEurl-0123456789-abcdefghij/x?key=FAKEquery123456"}}}}', encoding="utf-8")
    status, stdout, stderr = _import_cli("--from", "auto", str(settings), "--project", "demo")
    assert status == 0, stderr
    assert "FAKEurl" not in stdout + stderr and "FAKEquery" not in stdout + stderr
    assert yaml.safe_load(stdout)["servers"]["hook"]["transport"]["url"] == "https://hooks.example.com/"


def test_two_servers_with_literal_tokens_under_one_name_get_distinct_secrets(tmp_path: Path) -> None:
    import json

    import yaml

    config = tmp_path / "claude_desktop_config.json"
    servers = {name: {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": f"ghp_FAKE{name}0123456789abcdefghijklmnop"}} for name in ("work", "home")}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    status, stdout, stderr = _import_cli("--from", "auto", str(config), "--project", "demo")
    assert status == 0, stderr
    spec = yaml.safe_load(stdout)
    refs = {spec["secrets"][binding["use"]]["ref"] for name in ("work", "home") for binding in spec["servers"][name]["secrets"]}
    assert refs == {"GITHUB_TOKEN", "HOME_GITHUB_TOKEN"}
    assert stderr.count("IM001") == 2 and "ghp_FAKE" not in stdout + stderr


def test_odd_entries_are_kept_with_a_todo_and_the_spec_stays_valid(tmp_path: Path) -> None:
    import yaml

    from mcpspec import api

    config = tmp_path / "claude_desktop_config.json"
    config.write_text('{"mcpServers": {"x": {}, "y": {"command": 5, "env": {"A": null, "B": 3}}, "z": {"url": "not a url"}}}', encoding="utf-8")
    out = tmp_path / "mcp-sandbox.yaml"
    status, _, stderr = _import_cli("--from", "auto", str(config), "-o", str(out), "--project", "demo")
    assert status == 0, stderr
    assert set(yaml.safe_load(out.read_text(encoding="utf-8"))["servers"]) == {"x", "y", "z"}
    assert "has no command" in stderr and "TODO" in out.read_text(encoding="utf-8")
    errors = [r for item in api.lint_files([out]).report.files for r in item.results if r.severity == "error"]
    assert errors == [], [(r.code, r.message) for r in errors]


def test_a_catalog_entry_gives_kind_tools_egress_and_the_credential_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in entry for the catalog hook (known.lookup) shows what the importer takes from it."""
    from mcpspec.importer import known
    from mcpspec.importer.clients import load
    from mcpspec.importer.convert import convert

    entry = known.Known("github", "data", {"get_issue": ["reads_private"], "create_issue": ["external_send"]}, ["api.github.com:443"], "GITHUB_PERSONAL_ACCESS_TOKEN", ["issues:read"], "30d")
    monkeypatch.setattr(known, "lookup", lambda command, url: entry if "@modelcontextprotocol/server-github" in command else None)
    conversion = convert(load(CLIENT_DIR / "cline_mcp_settings.json", "cline"))
    github = conversion.servers["github"]
    assert github["kind"] == "data" and list(github["egress"]["allow"]) == [], "the catalog's egress is a suggestion, never an allow entry"
    assert list(github["tools"]["get_issue"]["effects"]) == ["reads_private"] and "approval" not in github["tools"]["get_issue"]
    assert github["tools"]["create_issue"]["approval"] == "always", "an auto-approved tool asks until reviewed"
    assert list(github["tools"]["push_files"]["effects"]) == [] and github["tools"]["push_files"]["approval"] == "always"
    secret = conversion.secrets["github-personal-access-token"]
    assert list(secret["scopes"]) == ["issues:read"] and secret["ttl"] == "30d"
    assert "IM004" not in {f.code for f in conversion.findings}


def test_importing_the_same_config_again_into_its_spec_adds_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    status, _, stderr = _import_cli("--from", "auto", str(CLIENT_DIR / "cursor-mcp.json"), "-o", str(spec), "--project", "demo")
    assert status == 0, stderr
    first = spec.read_text(encoding="utf-8")
    status, _, stderr = _import_cli("--from", "auto", str(CLIENT_DIR / "cursor-mcp.json"), "--into", str(spec))
    assert status == 0, stderr
    assert spec.read_text(encoding="utf-8") == first
    assert stderr.count("IM010 [info] already-imported") == 3


def test_the_importer_asks_the_built_in_catalog() -> None:
    from mcpspec.importer import known

    fetch = known.lookup(["uvx", "mcp-server-fetch"], None)
    assert fetch is not None and fetch.name == "fetch" and fetch.tools
    github = known.lookup(["npx", "-y", "@modelcontextprotocol/server-github"], None)
    assert github is not None and github.secret_env and "repo" not in github.scopes
    assert known.lookup(["/opt/acme/bin/our-own-server"], None) is None


ROUND_TRIP = {
    "claude-desktop": ("claude_desktop_config.json", "claude_desktop_config.json"),
    "claude-code": ("claude-code.mcp.json", ".mcp.json"),
    "vscode": ("vscode-mcp.json", ".vscode/mcp.json"),
    "cursor": ("cursor-mcp.json", ".cursor/mcp.json"),
    "codex": ("codex-config.toml", ".codex/config.toml"),
}


@pytest.mark.parametrize("client", sorted(ROUND_TRIP))
def test_import_then_build_for_the_same_client_names_the_same_servers(client: str, tmp_path: Path) -> None:
    """The user's path: import a client's config, build the client target, point the client at it."""
    import json
    import subprocess
    import sys
    import tomllib

    import yaml

    source, emitted = ROUND_TRIP[client]
    spec = tmp_path / "mcp-sandbox.yaml"
    status, _, stderr = _import_cli("--from", client, str(CLIENT_DIR / source), "-o", str(spec), "--project", "demo")
    assert status == 0, stderr
    servers = yaml.safe_load(spec.read_text(encoding="utf-8"))["servers"]
    local = {name for name, server in servers.items() if server.get("placement") != "external"}
    out = tmp_path / "out"
    # The imported spec still holds what the review must fix (npx without a version, say): that is lint's
    # job, so this build runs only the target's own rules.
    config = tmp_path / "mcpspec-config.yaml"
    config.write_text("select: [TG]\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mcpspec", "build", str(spec), "--target", "client", "--client", client, "--out", str(out), "--config", str(config)],
                          capture_output=True, text=True, timeout=300, check=False)
    text = (out / emitted).read_text(encoding="utf-8")
    emitted_config = tomllib.loads(text) if emitted.endswith(".toml") else json.loads(text)
    key = {"codex": "mcp_servers", "vscode": "servers"}.get(client, "mcpServers")
    built = set(emitted_config[key])
    assert built and built <= local, (built, local, done.stderr)
    assert local - built == {name for name in local - built if name in done.stdout + done.stderr}, "a server left out is named in the build's report"
    for token in TOKENS:
        assert token not in text


def test_a_catalog_server_started_by_a_runner_gets_the_pinned_install_and_no_download_at_start(tmp_path: Path) -> None:
    """npx/uvx/docker fetch the newest release at every start; the spec starts the catalog's pinned
    release's installed program instead, keeps arguments that are the user's choice, and mounts what
    the program needs. A version or image tag the client pinned is kept."""
    import json

    import yaml

    from mcpspec import api
    from mcpspec.catalog import get

    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/project"]},
        "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
        "gh": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"]},
        "gh-tagged": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server:v0.29.0"]},
        "pg": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://reader@db.internal.example/app"]},
        "mem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2025.1.1"]},
    }}), encoding="utf-8")
    out = tmp_path / "mcp-sandbox.yaml"
    status, _, stderr = _import_cli("--from", "auto", str(config), "-o", str(out), "--project", "demo")
    assert status == 0, stderr
    servers = yaml.safe_load(out.read_text(encoding="utf-8"))["servers"]
    filesystem, fetch, github = get("filesystem"), get("fetch"), get("github")
    assert filesystem and fetch and github
    assert servers["fs"]["command"] == [filesystem.command[0], "/workspace/input"], "the client's one dir, and no output dir the catalog would add"
    assert servers["fs"]["package"] == {"registry": "npm", "name": filesystem.package.name, "version": filesystem.version}
    assert [m["from"] for m in servers["fs"]["mounts"]] == ["workspace.input"]
    assert servers["fetch"]["command"] == list(fetch.command) and servers["fetch"]["package"]["version"] == fetch.version
    assert "mounts" not in servers["fetch"], "the catalog says fetch needs no workspace dir"
    gh_run = ["docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"]
    assert servers["gh"]["image"] == f"{github.package.name}:{github.version}" and servers["gh"]["command"] == gh_run, "docker's flags kept, none added"
    assert servers["gh-tagged"]["image"] == "ghcr.io/github/github-mcp-server:v0.29.0"
    assert servers["pg"]["command"] == ["mcp-server-postgres", "postgresql://reader@db.internal.example/app"], "the database URL is the user's"
    assert servers["mem"]["package"]["version"] == "2025.1.1" and servers["mem"]["command"] == ["mcp-server-memory"]
    downloads = {r.message.split("'")[1] for item in api.lint_files([out]).report.files for r in item.results if r.code in ("SP002", "SP009")}
    assert downloads == {"gh", "gh-tagged"}, "only the docker run kept as the client wrote it pulls at start"


def test_secrets_after_any_credential_flag_in_a_header_or_env_assignment_are_never_copied(tmp_path: Path) -> None:
    import json

    secrets = {f"S3CRETvalue{n:02d}" for n in range(6)}
    args = ["-y", "@modelcontextprotocol/server-github", "--client-secret", "S3CRETvalue00", "--header=Authorization: Bearer S3CRETvalue01",
            "--github-token", "S3CRETvalue02", "--auth-token=S3CRETvalue03", "--key", "S3CRETvalue04"]
    config = {"mcpServers": {"gh": {"command": "npx", "args": args},
                             "dock": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN=S3CRETvalue05", "ghcr.io/github/github-mcp-server"]}}}
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(json.dumps(config), encoding="utf-8")
    code, out, err = _import_cli("--from", "auto", str(source), "-o", str(tmp_path / "out.yaml"))
    assert code in (0, 1), err
    text = (tmp_path / "out.yaml").read_text(encoding="utf-8") + out + err
    assert not [secret for secret in secrets if secret in text], text


def test_a_line_break_in_an_argument_starts_no_line_of_its_own_in_the_spec(tmp_path: Path) -> None:
    import json

    from ruamel.yaml import YAML

    config = {"mcpServers": {"gh": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github", "--x", "1\nextends: pwned\n# hi"]}}}
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(json.dumps(config), encoding="utf-8")
    code, _, err = _import_cli("--from", "auto", str(source), "-o", str(tmp_path / "out.yaml"))
    assert code in (0, 1), err
    text = (tmp_path / "out.yaml").read_text(encoding="utf-8")
    assert "extends" not in YAML(typ="safe").load(text)
    assert not [line for line in text.splitlines() if line.startswith(("extends", "# hi"))], text


def _imported_spec(tmp_path: Path, config: dict[str, object]) -> Path:
    """The spec `mcpspec import --from auto` writes for a Claude Desktop ``config``."""
    import json

    source = tmp_path / "claude_desktop_config.json"
    source.write_text(json.dumps(config), encoding="utf-8")
    out = tmp_path / "mcp-sandbox.yaml"
    code, _, err = _import_cli("--from", "auto", str(source), "-o", str(out))
    assert code in (0, 1), err
    return out


def test_a_character_yaml_allows_nowhere_in_an_argument_leaves_the_spec_readable(tmp_path: Path) -> None:
    """U+FFFE, U+FFFF and lone surrogates in a client's argument reach the spec's comments escaped:
    written raw, no YAML reader accepts the file (found by tests/test_fuzz_import.py)."""
    import yaml

    config = {"mcpServers": {"gh": {"command": "docker", "args": ["\ufffe", "\uffff", "run", "-i", "--rm", "ghcr.io/github/github-mcp-server"]}}}
    text = _imported_spec(tmp_path, config).read_text(encoding="utf-8")
    assert "\\ufffe" in text and "\\uffff" in text, text
    assert "gh" in yaml.safe_load(text)["servers"]


def test_an_image_or_version_with_a_line_break_is_not_copied_and_the_spec_stays_valid(tmp_path: Path) -> None:
    from mcpspec import api

    config = {"mcpServers": {"dock": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/acme/tool:v1\n# x"]},
                             "uv": {"command": "uvx", "args": ["mcp-server-fetch==1.0\n  evil: true"]}}}
    out = _imported_spec(tmp_path, config)
    text = out.read_text(encoding="utf-8")
    import yaml

    servers = yaml.safe_load(text)["servers"]
    assert "image" not in servers["dock"] and "version" not in servers["uv"]["package"], servers
    run = api.lint_files([out])
    errors = [r for item in run.report.files for r in item.results if r.severity == "error"]
    assert errors == [], [(r.code, r.message) for r in errors]


def test_values_yaml_1_1_reads_otherwise_are_quoted_so_the_spec_holds_them_as_written(tmp_path: Path) -> None:
    """ruamel writes YAML 1.2; the spec loader reads YAML 1.1, where `yes` and `on` are booleans,
    `:q` and `?q` are syntax, and NEL, LS and PS break lines (a red team's finding)."""
    from mcpspec.source.loader import load_file

    odd = [":q", "?q", "? q", "yes", "on", "No", "1_000", "q\x85r", "x\u2028y", "z\u2029w"]
    config = {"mcpServers": {"odd": {"command": "node", "args": ["server.js", *odd], "env": {"MODE": "yes"}}}}
    data, _ = load_file(_imported_spec(tmp_path, config))
    server = data["servers"]["odd"]
    assert server["command"][-len(odd):] == odd, server["command"]
