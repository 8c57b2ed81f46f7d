"""Import keeps what the client config allowed and no more: tool filters, destinations, docker
run flags, client variables, archived servers, and the written file itself (issue 26, items 1-4)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, require_tool


def _import(tmp_path: Path, name: str, text: str, client: str = "auto") -> tuple[dict[str, Any], list[str], Path]:
    """The spec, the rendered findings and the spec's path of importing ``text`` written to ``name``."""
    from mcpspec.importer.run import import_config

    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    done = import_config(source, client, "demo")
    out = tmp_path / "mcp-sandbox.yaml"
    out.write_text(done.text, encoding="utf-8")
    return yaml.safe_load(done.text), [finding.render() for finding in done.findings], out


def _comments(path: Path) -> str:
    """The spec's comments as one line (a long comment is wrapped over several)."""
    return " ".join(line.split("#", 1)[1].strip() for line in path.read_text(encoding="utf-8").splitlines() if line.lstrip().startswith("#"))


def _lint_codes(path: Path) -> dict[str, list[str]]:
    from mcpspec import api

    found: dict[str, list[str]] = {}
    for item in api.lint_files([path]).report.files:
        for result in item.results:
            found.setdefault(result.code, []).append(result.message)
    return found


CODEX_FILTERS = """
[mcp_servers.gh]
command = "docker"
args = ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"]
enabled_tools = ["get_file_contents", "list_issues", "not_in_the_catalog"]

[mcp_servers.gh-deny]
command = "docker"
args = ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"]
disabled_tools = ["search_code", "get_me"]

[mcp_servers.both]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
enabled_tools = ["get_file_contents", "search_code"]
disabled_tools = ["search_code"]
"""


def test_the_client_tool_filter_wins_over_the_catalog_and_im007_says_what_was_done(tmp_path: Path) -> None:
    from mcpspec.catalog import get

    github = get("github")
    assert github is not None
    spec, findings, _ = _import(tmp_path, "config.toml", CODEX_FILTERS)
    servers = spec["servers"]
    assert list(servers["gh"]["tools"]) == ["get_file_contents", "list_issues", "not_in_the_catalog"]
    assert servers["gh"]["tools"]["get_file_contents"]["effects"] == ["reads_private", "reads_untrusted"], "the catalog's effects for a tool it knows"
    assert servers["gh"]["tools"]["not_in_the_catalog"] == {"effects": [], "approval": "always"}
    assert set(servers["gh-deny"]["tools"]) == {tool.name for tool in github.tools} - {"search_code", "get_me"}
    assert list(servers["both"]["tools"]) == ["get_file_contents"], "the deny list wins over the allow list"
    assert all(server["unlisted_tools"] == "deny" for server in servers.values())
    im007 = [line for line in findings if "IM007" in line]
    assert any("shows only tools get_file_contents, list_issues, not_in_the_catalog of server 'gh'" in line for line in im007), im007
    assert any("hid tools search_code, get_me of server 'gh-deny': they are not listed" in line for line in im007), im007


def test_gemini_include_and_exclude_tools_exclude_wins(tmp_path: Path) -> None:
    config = {"mcpServers": {"gh": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "includeTools": ["list_issues", "create_issue"], "excludeTools": ["create_issue"]}}}
    spec, _, _ = _import(tmp_path, "settings.json", json.dumps(config), "gemini")
    assert list(spec["servers"]["gh"]["tools"]) == ["list_issues"]


def test_a_disabled_tools_list_in_a_json_config_narrows_too(tmp_path: Path) -> None:
    config = {"mcpServers": {"gh": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "alwaysAllow": ["list_issues"], "disabledTools": ["push_files", "list_issues"]}}}
    spec, _, _ = _import(tmp_path, "cline_mcp_settings.json", json.dumps(config), "cline")
    assert "push_files" not in spec["servers"]["gh"]["tools"] and "list_issues" not in spec["servers"]["gh"]["tools"], "the deny list wins over auto-approval too"


def test_egress_comes_from_the_users_arguments_and_env_never_from_the_catalog(tmp_path: Path) -> None:
    config = {"mcpServers": {
        "pg": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://readonly@db.internal:5432/app"]},
        "pg-noport": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgres://reader:FakeP4ssword@pg.corp.internal/app"]},
        "pg-env": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"], "env": {"DATABASE_HOST": "warehouse.corp.internal:6432"}},
        "pg-none": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"]},
        "gh": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_API_URL": "https://ghe.corp.internal/api/v3"}},
        "gh-none": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
        "cache": {"command": "node", "args": ["cache.js", "redis://localhost", "--listen", "0.0.0.0:8080", "--metadata", "http://169.254.169.254:80/"]},
    }}
    spec, findings, out = _import(tmp_path, "claude_desktop_config.json", json.dumps(config))
    allow = {name: server["egress"]["allow"] for name, server in spec["servers"].items()}
    assert allow == {"pg": ["db.internal:5432"], "pg-noport": ["pg.corp.internal:5432"], "pg-env": ["warehouse.corp.internal:6432"], "pg-none": [],
                     "gh": ["ghe.corp.internal:443"], "gh-none": [], "cache": []}
    comments = _comments(out)
    assert "db.acme.example" not in json.dumps(spec), "the catalog's example database host is nowhere in the spec's data"
    assert "nothing in the client config names a destination, so none is allowed" in comments
    assert "the catalog says the server needs api.github.com:443" in comments, "a real catalog destination is a suggestion in a comment"
    assert "the client config also names localhost:6379, 0.0.0.0:8080, 169.254.169.254:80, not allowed" in comments, comments
    assert "FakeP4ssword" not in out.read_text(encoding="utf-8") + "".join(findings)


DOCKER_FLAGS = [
    ("-v", "/var/run/docker.sock:/var/run/docker.sock"), ("--volume=/run/podman/podman.sock:/run/podman/podman.sock",), ("-v", "~/.aws:/root/.aws:ro"),
    ("-v/home/alice/.ssh:/root/.ssh",), ("--mount", "type=bind,source=/Users/alice/.kube,target=/kube"), ("-v", "${HOME}/.config/gcloud:/gcloud"),
    ("--mount=type=bind,src=/,dst=/host",), ("-v", "/etc:/host/etc:ro"), ("-v", "/home/alice:/data"), ("--network", "host"), ("--net=host",),
    ("--privileged",), ("--cap-add", "SYS_ADMIN"), ("--cap-add=NET_RAW",), ("--pid", "host"), ("--ipc=host",), ("--userns", "host"),
    ("--security-opt", "seccomp=unconfined"), ("--security-opt=apparmor=unconfined",), ("--device", "/dev/fuse"),
]


def test_every_dangerous_docker_flag_is_a_finding_at_import_and_at_lint_and_the_command_is_kept_exactly(tmp_path: Path) -> None:
    flags = [word for flag in DOCKER_FLAGS for word in flag]
    safe = ["-i", "--rm", "--read-only", "--name", "--privileged-name", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "-v", "cache:/cache", "-w", "/work"]
    args = ["run", *safe, *flags, "ghcr.io/github/github-mcp-server", "stdio", "--privileged", "--network", "host"]  # after the image: its own arguments
    spec, findings, out = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {"gh": {"command": "docker", "args": args}}}))
    assert spec["servers"]["gh"]["command"] == ["docker", *args], "every flag the client had, none added, none dropped"
    im011 = [line for line in findings if "IM011 [high] container-escape-flag" in line]
    assert len(im011) == len(DOCKER_FLAGS), "\n".join(im011)
    for flag in DOCKER_FLAGS:
        assert any(f"with {' '.join(flag)}:" in line for line in im011), flag
    assert not any("--privileged-name" in line or "cache:/cache" in line for line in im011)
    assert spec["servers"]["gh"]["image"].startswith("ghcr.io/github/github-mcp-server:")
    assert "mounts" not in spec["servers"]["gh"] or all(str(m["from"]).startswith("workspace.") for m in spec["servers"]["gh"]["mounts"]), "no -v becomes a mount"
    assert len(_lint_codes(out)["SP010"]) == len(DOCKER_FLAGS), "lint reports each flag still in the command"


def test_a_catalog_image_run_by_docker_keeps_the_users_flags_and_arguments(tmp_path: Path) -> None:
    args = ["run", "-i", "--rm", "-e", "GITHUB_TOOLSETS=repos", "ghcr.io/github/github-mcp-server:v0.29.0", "stdio", "--toolsets", "repos"]
    spec, _, _ = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {"gh": {"command": "docker", "args": args}}}))
    assert spec["servers"]["gh"]["command"] == ["docker", *args]
    assert "--read-only" not in spec["servers"]["gh"]["command"] and spec["servers"]["gh"]["image"] == "ghcr.io/github/github-mcp-server:v0.29.0"


def test_client_variables_never_reach_env_values_raw(tmp_path: Path) -> None:
    env = {"ROOT": "${workspaceFolder}", "SRC": "${workspaceFolder:web}/src", "CACHE": "${userHome}/.cache", "BASE": "${workspaceFolderBasename}",
           "CFG": "${config:editor.fontSize}", "HOMEDIR": "$HOME/x", "PLAIN": "debug"}
    spec, findings, out = _import(tmp_path, "mcp.json", json.dumps({"servers": {"t": {"command": "node", "args": ["s.js"], "env": env}}}), "vscode")
    assert spec["servers"]["t"]["env"]["set"] == {"ROOT": "/workspace/input", "SRC": "/workspace/input/src", "PLAIN": "debug"}
    assert "${" not in json.dumps(spec["servers"]["t"]["env"])
    refused = sorted(line.split("env ", 1)[1].split(" ", 1)[0] for line in findings if "IM012 [medium] editor-variable" in line)
    assert refused == ["BASE", "CACHE", "CFG", "HOMEDIR"]
    assert "TODO: the client also set CACHE, BASE, CFG, HOMEDIR" in _comments(out)


def test_long_names_are_cut_at_a_word_boundary_and_stay_distinct(tmp_path: Path) -> None:
    from mcpspec.importer.references import spec_name

    assert spec_name("acme-production-github-personal-access-token-for-ci") == "acme-production-github-personal-access"
    servers = {f"acme production warehouse reporting server {n}": {"command": "node", "args": ["s.js"], "env": {"WAREHOUSE_REPORTING_SERVICE_ACCOUNT_TOKEN": f"FakeTokenValue{n}xyz0123456789"}} for n in "ab"}
    spec, _, _ = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": servers}))
    secrets = set(spec["secrets"])
    assert len(secrets) == 2, secrets
    words = {"acme", "production", "warehouse", "reporting", "server", "a", "b", "service", "account", "token", "2"}
    for name in [*secrets, *spec["servers"]]:
        assert len(name) <= 40 and set(name.split("-")) <= words, name


@pytest.mark.parametrize(("package", "successor"), [("@modelcontextprotocol/server-github", "github (ghcr.io/github/github-mcp-server)"), ("@modelcontextprotocol/server-puppeteer", "playwright (@playwright/mcp)"),
                                                    ("@modelcontextprotocol/server-postgres", None)])
def test_an_archived_reference_server_is_a_warning_naming_its_successor(tmp_path: Path, package: str, successor: str | None) -> None:
    _, findings, out = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {"s": {"command": "npx", "args": ["-y", package]}}}))
    im013 = [line for line in findings if "IM013 [medium] archived-server" in line]
    assert len(im013) == 1 and package in im013[0]
    assert (f"its maintained successor is {successor}" if successor else "the catalog names no maintained successor") in im013[0]
    assert "archived upstream" in _comments(out)


def test_a_current_server_is_not_called_archived(tmp_path: Path) -> None:
    _, findings, _ = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {"s": {"command": "uvx", "args": ["mcp-server-fetch"]}}}))
    assert not [line for line in findings if "IM013" in line]


def test_a_literal_secret_is_marked_exposed_and_reaches_lint_and_the_report_until_cleared(tmp_path: Path) -> None:
    import subprocess
    import sys

    config = {"mcpServers": {"gh": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_FAKEexposed0123456789abcdefghijklmn"}}}}
    spec, _, out = _import(tmp_path, "claude_desktop_config.json", json.dumps(config))
    assert spec["secrets"]["github-personal-access-token"]["exposed"] == "claude_desktop_config.json:1"
    messages = _lint_codes(out)["SE010"]
    assert len(messages) == 1 and "rotate it" in messages[0] and "ghp_FAKE" not in messages[0]
    report = subprocess.run([sys.executable, "-m", "mcpspec", "report", str(out)], capture_output=True, text=True, timeout=120, check=False)
    assert "SE010" in report.stdout and "ghp_FAKE" not in report.stdout + report.stderr, report.stderr
    cleared = tmp_path / "cleared.yaml"
    cleared.write_text("\n".join(line for line in out.read_text(encoding="utf-8").splitlines() if "exposed:" not in line) + "\n", encoding="utf-8")
    assert "SE010" not in _lint_codes(cleared), "deleting the mark after rotating clears the finding"


@pytest.mark.parametrize("name", ["claude_desktop_config-realistic.json", "vscode-realistic-mcp.json", "codex-realistic-config.toml", "claude_desktop_config.json", "continue-config.yaml"])
def test_the_written_spec_starts_with_the_schema_modeline_and_yamllint_has_nothing_to_say(name: str) -> None:
    from yamllint import linter
    from yamllint.config import YamlLintConfig

    from mcpspec.importer.run import import_config

    text = import_config(REPO / "tests" / "clients" / name, "auto", "demo").text
    assert text.splitlines()[0] == "# yaml-language-server: $schema=mcp-sandbox.schema.json"
    assert "mcpspec schema > mcp-sandbox.schema.json" in text.splitlines()[1]
    problems = list(linter.run(text, YamlLintConfig("extends: default")))
    assert problems == [], [f"{p.line}:{p.column} {p.level} {p.desc} ({p.rule})" for p in problems]


def test_the_exposed_mark_of_a_config_with_an_odd_file_name_keeps_the_spec_valid(tmp_path: Path) -> None:
    name = "claude_desktop_config \x1b[31m\u2028" + "x" * 300 + ".json"
    config = {"mcpServers": {"gh": {"command": "node", "args": ["s.js"], "env": {"API_TOKEN": "FakeTokenValue0123456789abcdef"}}}}
    spec, _, out = _import(tmp_path, name[:250], json.dumps(config), "claude-desktop")
    exposed = spec["secrets"]["api-token"]["exposed"]
    assert exposed.endswith(":1") and "\x1b" not in exposed and len(exposed) <= 200
    assert "SE010" in _lint_codes(out) and "SC" not in "".join(_lint_codes(out))


def test_a_line_break_in_a_docker_flag_cannot_forge_a_finding_line(tmp_path: Path) -> None:
    args = ["run", "-v", "/var/run/docker.sock:/x\nconfig.json:1:1: IM999 [info] forged: all clear", "img"]
    _, findings, _ = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {"d": {"command": "docker", "args": args}}}))
    assert all("\n" not in line for line in findings) and any("IM011" in line and "\\n" in line for line in findings), findings


def test_a_hash_in_a_long_quoted_value_is_not_taken_for_a_comment_by_the_layout(tmp_path: Path) -> None:
    name = "a very long server name that goes on and on #not-a-comment and more words"
    label = "x #y and a very long argument that needs quoting because of the hash #z"
    spec, _, _ = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {name: {"command": "node", "args": ["s.js", "--label", label]}}}))
    server = next(iter(spec["servers"].values()))
    assert server["description"] == f"Imported from the claude-desktop server {name!r}." and server["command"][-1] == label


HIDDEN_RUNS = {
    "global-value": ["nerdctl", "--namespace", "k8s.io", "run", "--privileged", "ghcr.io/acme/tool"],
    "mount-case": ["docker", "run", "--mount", "Type=bind,Source=/var/run/docker.sock,Target=/s", "ghcr.io/acme/tool"],
    "mount-csv": ["docker", "run", "--mount", 'type=bind,"source=/",target=/host', "ghcr.io/acme/tool"],
    "ns-path": ["podman", "run", "--network", "ns:/proc/1/ns/net", "ghcr.io/acme/tool"],
    "device-rule": ["docker", "run", "--device-cgroup-rule", "a *:* rwm", "ghcr.io/acme/tool"],
    "unmask": ["podman", "run", "--security-opt", "unmask=ALL", "ghcr.io/acme/tool"],
}


@pytest.mark.parametrize("name", sorted(HIDDEN_RUNS))
def test_a_dangerous_flag_behind_an_unlisted_global_option_or_mount_syntax_is_still_a_finding(tmp_path: Path, name: str) -> None:
    """A global option's value the reader did not know, a --mount read as case-sensitive keys split on
    commas, a namespace joined by path, a device rule or an unmask hid the flag from import and SP010."""
    command, *args = HIDDEN_RUNS[name]
    spec, findings, out = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {"s": {"command": command, "args": args}}}))
    assert spec["servers"]["s"]["command"] == HIDDEN_RUNS[name]
    assert [line for line in findings if "IM011 [high] container-escape-flag" in line], findings
    assert len(_lint_codes(out).get("SP010", [])) == 1


def test_a_url_whose_authority_holds_a_backslash_grants_no_host(tmp_path: Path) -> None:
    """node (WHATWG) reads https://good.example\\@evil.example as good.example, Python's urlsplit as
    evil.example: import took the second and allowed evil.example, a host a node server never asked for."""
    url = "https://good.example\\@evil.example/"
    node = subprocess.run([require_tool("node"), "-e", "console.log(new URL(process.argv[1]).hostname)", url], capture_output=True, text=True, timeout=30, check=True)
    from urllib.parse import urlsplit

    assert node.stdout.strip() == "good.example" and urlsplit(url).hostname == "evil.example", "the parsers disagree"
    config = {"mcpServers": {"f": {"command": "node", "args": ["srv.js", "--url=" + url], "env": {"BASE_URL": url}}}}
    spec, _, out = _import(tmp_path, "claude_desktop_config.json", json.dumps(config))
    allow = spec["servers"]["f"].get("egress", {}).get("allow", [])
    assert not any("example" in entry for entry in allow), allow
    assert "evil.example" in _comments(out), "the URL is named in a comment for the user to decide"


VSCODE_MOUNTS = {
    "colon-in-variable": "${env:HOME}/.ssh:/k",
    "whole-home": "${env:HOME}:/h",
    "profile": "${env:USERPROFILE}/.aws:/k",
    "climb": "${workspaceFolder}/../../../..:/h",
}


@pytest.mark.parametrize("name", sorted(VSCODE_MOUNTS))
def test_a_mount_written_with_a_variable_the_client_fills_in_is_still_a_finding(tmp_path: Path, name: str) -> None:
    """VS Code fills in ${env:HOME} (its colon was read as -v's separator, so the source was '${env') and
    ${workspaceFolder}/../.. reaches above the workspace: each hid a host mount from import and SP010."""
    args = ["run", "-i", "-v", VSCODE_MOUNTS[name], "ghcr.io/acme/tool"]
    spec, findings, out = _import(tmp_path, "mcp.json", json.dumps({"servers": {"s": {"command": "docker", "args": args}}}), "vscode")
    assert spec["servers"]["s"]["command"][:4] == ["docker", *args[:3]]  # ${workspaceFolder} becomes the sandbox's workspace path
    assert [line for line in findings if "IM011 [high] container-escape-flag" in line], findings
    assert len(_lint_codes(out).get("SP010", [])) == 1


@pytest.mark.parametrize("url", ["http://[::ffff:127.0.0.1]:8080/", "http://[::ffff:7f00:1]/", "http://[::ffff:0.0.0.0]/", "http://[::ffff:169.254.169.254]/"])
def test_this_machine_or_metadata_written_as_an_ipv4_mapped_address_is_never_allowed(tmp_path: Path, url: str) -> None:
    """[::ffff:127.0.0.1] is 127.0.0.1 to a dual-stack socket (the proxy's): import allowed it while it refused 127.0.0.1."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))  # the premise, on loopback: a v6 socket to the mapped address reaches it
    with listener, socket.create_connection(("::ffff:127.0.0.1", listener.getsockname()[1]), timeout=5):
        listener.accept()[0].close()
    spec, _, out = _import(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {"s": {"command": "node", "args": ["srv.js"], "env": {"URL": url}}}}))
    assert spec["servers"]["s"].get("egress", {}).get("allow", []) == []
    assert "ffff" in _comments(out), "named as not allowed"
