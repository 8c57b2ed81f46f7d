"""The client target: each client's config parses in the client's own format, names every server
the spec runs here, starts each through `mcpspec run SPEC SERVER`, holds no other value of the
spec (no secret, no env value, no path), and carries the spec's approvals where the client can."""

from __future__ import annotations

import datetime
import json
import os
import tomllib
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from mcpspec.api import load_text
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import MANIFEST, Build, build_plan
from mcpspec.targets.client.formats import CLIENTS

TODAY = datetime.date(2026, 12, 1)
SPEC_PATH = "/srv/mcp/acme/mcp-sandbox.yaml"

# Literal values the spec carries that no client config may hold: only the spec's path and the names.
CANARIES = ("canary-env-value-7f3a", "/srv/canary-secret-file", "CANARY_TOKEN_VAR", "/srv/canary-mount")

SPEC = """\
version: 1
project: acme
secrets:
  token: {provider: env, ref: CANARY_TOKEN_VAR}
  keyfile: {provider: file, ref: /srv/canary-secret-file}
approvals:
  require: [deploy]
servers:
  repo:
    kind: filesystem
    trust: first-party
    placement: dedicated
    command: [/usr/bin/true]
    env: {set: {GREETING: canary-env-value-7f3a}}
    mounts:
      - {from: /srv/canary-mount, to: /data, mode: ro}
    secrets:
      - {use: token, as: {env: TOKEN}}
    tools:
      read_file: {effects: [reads_private]}
      ship: {effects: [deploy]}
      tidy: {effects: [writes_local], approval: per-session}
      odd.name: {effects: [reads_private], approval: always}
  open:
    kind: other
    trust: first-party
    placement: dedicated
    command: [/usr/bin/true]
    unlisted_tools: allow
    secrets:
      - {use: keyfile, as: {file: /run/secrets/key}}
    tools:
      echo: {effects: [none]}
  far:
    kind: search
    trust: third-party
    placement: external
    transport: {type: http, url: "https://mcp.acme.example/"}
"""


def _build(client: str, spec: str = SPEC, spec_path: str = SPEC_PATH) -> Build:
    return build_plan(load_text(spec, "mcp-sandbox.yaml"), "client", today=TODAY, options=BuildOptions(client=client, spec_path=spec_path))


def _servers(client: str, files: dict[str, str]) -> dict[str, dict[str, object]]:
    """The servers of the emitted config, read as the client reads it."""
    if client == "codex":
        data = tomllib.loads(files[".codex/config.toml"])
        servers = data["mcp_servers"]
    else:
        name = {"claude-desktop": "claude_desktop_config.json", "claude-code": ".mcp.json", "vscode": ".vscode/mcp.json", "cursor": ".cursor/mcp.json"}[client]
        data = json.loads(files[name])
        servers = data["servers" if client == "vscode" else "mcpServers"]
    assert isinstance(servers, dict)
    return servers


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_each_config_parses_and_starts_every_server_through_mcpspec_run(client: str) -> None:
    build = _build(client)
    assert not build.blocked, [(r.code, r.message) for r in build.results if r.code.startswith("TG")]
    servers = _servers(client, build.files)
    assert sorted(servers) == ["open", "repo"]  # the external server runs elsewhere: no entry
    for name, server in servers.items():
        assert server["command"] == "mcpspec"
        assert server["args"] == ["run", SPEC_PATH, name]
        assert set(server) <= {"type", "command", "args", "enabled_tools"}, server  # no env, no cwd, no headers
        if client in ("claude-code", "vscode"):
            assert server["type"] == "stdio"


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_no_value_of_the_spec_but_its_path_and_names_reaches_the_config(client: str) -> None:
    build = _build(client)
    for name, text in build.files.items():
        if name == MANIFEST:
            continue
        for canary in CANARIES:
            assert canary not in text, (name, canary)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_paths_are_data_that_the_serialiser_escapes(client: str) -> None:
    odd = '/srv/mcp/a "quoted" dir\\with\nnewline/[tables] = 1/ünï.yaml'
    servers = _servers(client, _build(client, spec_path=odd).files)
    assert [server["args"] for server in servers.values()] == [["run", odd, "repo"], ["run", odd, "open"]]


def test_claude_code_permissions_follow_the_specs_approvals() -> None:
    build = _build("claude-code")
    permissions = json.loads(build.files[".claude/settings.json"])["permissions"]
    # read_file needs nobody; echo has no effects; ship's deploy effect is required; tidy is per-session (the client's default prompt)
    assert permissions == {"allow": ["mcp__repo__read_file", "mcp__open__echo"], "ask": ["mcp__repo__ship"]}
    gaps = [r for r in build.results if r.code == "TG003" and "odd.name" in r.message]
    assert gaps and "permission rule" in gaps[0].message  # a tool name no rule can match is reported, not dropped silently


def test_codex_enables_only_the_listed_tools_when_unlisted_tools_are_denied() -> None:
    servers = _servers("codex", _build("codex").files)
    assert servers["repo"]["enabled_tools"] == ["odd.name", "read_file", "ship", "tidy"]
    assert "enabled_tools" not in servers["open"]  # unlisted tools pass (with approval): no list to give


@pytest.mark.parametrize("client", ["claude-desktop", "vscode", "cursor", "codex"])
def test_a_client_that_cannot_say_which_tools_need_approval_is_reported(client: str) -> None:
    build = _build(client)
    found = [r for r in build.results if r.code == "TG003" and "no setting for which tools need approval" in r.message]
    assert len(found) == 1 and found[0].path == ("servers", "repo", "tools"), [r.message for r in found]
    assert "ship" in found[0].message and "odd.name" in found[0].message
    controls = json.loads(build.files[MANIFEST])["servers"]["repo"]["controls"]
    assert controls["call-policy"] == "partial"


def test_claude_code_reports_no_approval_gap_for_tools_it_can_name() -> None:
    build = _build("claude-code")
    assert not [r for r in build.results if "no setting for which tools need approval" in r.message]


def test_a_server_of_several_agents_is_refused_with_tg004() -> None:
    spec = SPEC + "agents:\n  a: {servers: [repo]}\n  b: {servers: [repo, open]}\n"
    build = _build("vscode", spec)
    refused = [r for r in build.results if r.code == "TG004"]
    assert [r.path for r in refused] == [("servers", "repo")], [r.message for r in refused]
    assert build.blocked
    servers = _servers("vscode", build.files)
    assert sorted(servers) == ["open"]
    assert servers["open"]["args"] == ["run", SPEC_PATH, "open", "--agent", "b"]


def test_what_bwrap_refuses_the_client_target_refuses_too() -> None:
    """`mcpspec run` builds the bwrap launcher: a spec it cannot start must not get a config entry."""
    spec = SPEC.replace("    command: [/usr/bin/true]\n    unlisted_tools", '    command: "true && true"\n    unlisted_tools', 1)
    build = _build("cursor", spec)
    assert [r.path for r in build.results if r.code == "TG004"] == [("servers", "open", "command")]
    assert sorted(_servers("cursor", build.files)) == ["repo"]


def test_the_cli_writes_the_config_where_the_client_reads_it_with_the_specs_absolute_path(tmp_path: Path) -> None:
    spec = tmp_path / "project" / "mcp-sandbox.yaml"
    spec.parent.mkdir()
    spec.write_text(SPEC.replace("approvals:\n  require: [deploy]\n", ""), encoding="utf-8")
    out = tmp_path / "out"
    done = run_cli("build", "mcp-sandbox.yaml", "--target", "client", "--client", "vscode", "--out", str(out), cwd=spec.parent)
    assert done.returncode == 0, done.stderr
    servers = json.loads((out / ".vscode" / "mcp.json").read_text(encoding="utf-8"))["servers"]
    assert servers["repo"]["args"] == ["run", str(spec.resolve()), "repo"]


def test_the_cli_needs_client_for_the_client_target_and_refuses_it_for_another(tmp_path: Path) -> None:
    example = str(REPO / "examples" / "coding-agent.yaml")
    done = run_cli("build", example, "--target", "client", "--out", str(tmp_path / "a"))
    assert done.returncode == 2 and "the client target needs --client" in done.stderr, done.stderr
    done = run_cli("build", example, "--target", "client", "--client", "emacs", "--out", str(tmp_path / "a"))
    assert done.returncode == 2 and "claude-desktop, claude-code, vscode, cursor, codex" in done.stderr, done.stderr
    done = run_cli("build", example, "--target", "bwrap", "--client", "vscode", "--out", str(tmp_path / "b"))
    assert done.returncode == 2 and "the bwrap target takes no --client" in done.stderr, done.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_spec_path_the_client_would_expand_is_refused(client: str) -> None:
    path = "/srv/${HOME}/mcp-sandbox.yaml"
    build = _build(client, spec_path=path)
    refused = [r for r in build.results if r.code == "TG004"]
    if client in ("claude-code", "vscode", "cursor"):
        assert len(refused) == 1 and "expands" in refused[0].message and build.blocked
        assert set(build.files) == {MANIFEST}
    else:  # no interpolation in these clients: the path is data
        assert not refused
        assert all(server["args"][1] == path for server in _servers(client, build.files).values())


def test_a_rebuild_for_another_client_removes_the_first_clients_files_and_nothing_else(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(SPEC.replace("approvals:\n  require: [deploy]\n", ""), encoding="utf-8")
    out = tmp_path / "out"
    (out / ".vscode").mkdir(parents=True)
    (out / ".vscode" / "settings.json").write_text("{}\n")  # the user's own file beside the generated one
    (tmp_path / "outside.json").write_text("keep")
    assert run_cli("build", str(spec), "--target", "client", "--client", "vscode", "--out", str(out)).returncode == 0
    assert (out / ".vscode" / "mcp.json").is_file()
    manifest = out / MANIFEST
    data = json.loads(manifest.read_text())
    data["files"] += [".vscode/../../outside.json", "../outside.json", "a/b/c.json", "/etc/hostname"]
    manifest.write_text(json.dumps(data))
    done = run_cli("build", str(spec), "--target", "client", "--client", "claude-code", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert not (out / ".vscode" / "mcp.json").exists() and (out / ".vscode" / "settings.json").read_text() == "{}\n"
    assert (out / ".mcp.json").is_file() and (out / ".claude" / "settings.json").is_file()
    assert (tmp_path / "outside.json").read_text() == "keep"
    # A directory the build wrote into that has since become a link is not followed when its file goes stale.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "settings.json").write_text("theirs")
    (out / ".claude" / "settings.json").unlink()
    (out / ".claude").rmdir()
    (out / ".claude").symlink_to(elsewhere)
    done = run_cli("build", str(spec), "--target", "client", "--client", "codex", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "settings.json").read_text() == "theirs" and not (out / ".mcp.json").exists()
    assert (out / ".codex" / "config.toml").is_file()



def test_a_build_never_writes_through_a_directory_that_is_a_link_out_of_the_output(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(SPEC.replace("approvals:\n  require: [deploy]\n", ""), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mcp.json").write_text("theirs")
    (out / ".vscode").symlink_to(elsewhere)
    done = run_cli("build", str(spec), "--target", "client", "--client", "vscode", "--out", str(out))
    assert done.returncode == 2 and "is a symbolic link" in done.stderr, done.stderr
    assert (elsewhere / "mcp.json").read_text() == "theirs" and sorted(p.name for p in elsewhere.iterdir()) == ["mcp.json"]
    assert not (out / MANIFEST).exists()


def test_a_rebuild_reports_only_the_stale_files_it_removed(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(SPEC.replace("approvals:\n  require: [deploy]\n", ""), encoding="utf-8")
    out = tmp_path / "out"
    assert run_cli("build", str(spec), "--target", "client", "--client", "vscode", "--out", str(out)).returncode == 0
    (out / "adir").mkdir()
    (tmp_path / "outside.json").write_text("keep")
    (out / "link.json").symlink_to(tmp_path / "outside.json")
    data = json.loads((out / MANIFEST).read_text())
    data["files"] += ["adir", "link.json", "gone.json"]
    (out / MANIFEST).write_text(json.dumps(data))
    done = run_cli("build", str(spec), "--target", "client", "--client", "cursor", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "removed 1 stale" in done.stderr, done.stderr  # .vscode/mcp.json; not the directory, the link or a missing name
    assert (out / "adir").is_dir() and (out / "link.json").is_symlink() and (tmp_path / "outside.json").read_text() == "keep"


COMPOSE_SPEC = """\
version: 1
project: acme
workspace:
  root: /srv/ws
  dirs:
    output: {mode: rw}
secrets:
  token: {provider: file, ref: /srv/canary-secret-file}
agents:
  coder: {servers: [repo, net]}
servers:
  repo:
    kind: filesystem
    trust: first-party
    image: localhost/repo@sha256:REPO_DIGEST
    command: [/usr/bin/repo-server]
    mounts:
      - {from: workspace.output, to: /out}
    secrets:
      - {use: token, as: {file: /run/secrets/token}}
    tools:
      read_file: {effects: [reads_private]}
      ship: {effects: [deploy], approval: always}
  net:
    kind: search
    trust: first-party
    image: localhost/net@sha256:NET_DIGEST
    command: [/usr/bin/net-server]
    egress: {allow: ["docs.acme.example:443"]}
    tools:
      fetch: {effects: [reads_untrusted]}
""".replace("REPO_DIGEST", "a" * 64).replace("NET_DIGEST", "b" * 64)
PROXY = "localhost/squid@sha256:" + "c" * 64


def _compose_build(client: str, via: str = "docker-compose", out_dir: str = "/srv/build/client") -> Build:
    options = BuildOptions(client=client, spec_path=SPEC_PATH, via=via, out_dir=out_dir, proxy_image=PROXY)  # type: ignore[arg-type]
    return build_plan(load_text(COMPOSE_SPEC, "mcp-sandbox.yaml"), "client", today=TODAY, options=options)


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize(("via", "command", "head"), [("docker-compose", "docker", ["compose"]), ("podman-compose", "podman-compose", [])])
def test_via_compose_each_entry_runs_its_service_of_the_compose_build_beside_it(client: str, via: str, command: str, head: list[str]) -> None:
    build = _compose_build(client, via)
    assert not build.blocked, [(r.code, r.message) for r in build.results if r.code.startswith("TG")]
    assert {"compose/compose.yaml", "compose/net.squid.conf"} <= set(build.files)
    servers = _servers(client, build.files)
    assert sorted(servers) == ["net", "repo"]
    for name, server in servers.items():
        assert server["command"] == command
        assert server["args"] == [*head, "--project-name", f"mcpspec-acme-coder-{client}", "--file", "/srv/build/client/compose/compose.yaml", "run", "--rm", "-T", name]
        # compose reads the whole file, whose workspace volume needs the run directory: every entry sets it;
        # podman-compose reads the seccomp profiles from its working directory, which COMPOSE_PROJECT_DIR sets
        project_dir = {"COMPOSE_PROJECT_DIR": "/srv/build/client/compose"} if via == "podman-compose" else {}
        assert server["env"] == {"MCPSPEC_RUN_DIR": f"/srv/ws/coder/{client}", **project_dir}
    assert {"compose/net.seccomp.json", "compose/repo.seccomp.json", "compose/mcpspec-helpers.seccomp.json"} <= set(build.files)
    compose = build.files["compose/compose.yaml"]
    assert "${MCPSPEC_RUN_DIR:?" in compose and "net_egress:" in compose and "network_mode: service:net_link" in compose
    for name, text in build.files.items():
        if not name.startswith(("compose/", MANIFEST)):
            assert "canary" not in text and "/srv/canary-secret-file" not in text, name


def test_via_compose_the_matrix_is_the_compose_targets_and_call_policy_only_what_the_client_can_ask() -> None:
    vscode = json.loads(_compose_build("vscode").files[MANIFEST])["servers"]["repo"]["controls"]
    claude = json.loads(_compose_build("claude-code").files[MANIFEST])["servers"]["repo"]["controls"]
    assert vscode["call-policy"] == "none" and claude["call-policy"] == "partial"
    assert vscode["mounts"] == "full" and vscode["secrets"] == "full"
    desktop = json.loads(_compose_build("claude-desktop").files[MANIFEST])["servers"]["repo"]["controls"]
    run = json.loads(_build("claude-desktop").files[MANIFEST])["servers"]["repo"]["controls"]
    assert (run["call-policy"], desktop["call-policy"]) == ("partial", "none"), "`mcpspec run` holds the calls; under compose nothing does"
    messages = [r.message for r in _compose_build("vscode").results if r.code == "TG003"]
    assert any("no `mcpspec run` relays MCP under compose" in m for m in messages), messages


def test_via_compose_needs_the_output_directory_and_via_run_takes_no_proxy_image() -> None:
    with pytest.raises(ValueError, match="needs the output directory's absolute path"):
        _compose_build("vscode", out_dir="build/client")
    with pytest.raises(ValueError, match="--proxy-image is for --via"):
        build_plan(load_text(SPEC, "mcp-sandbox.yaml"), "client", today=TODAY, options=BuildOptions(client="vscode", spec_path=SPEC_PATH, proxy_image=PROXY))


@pytest.mark.parametrize("client", ["claude-code", "vscode", "cursor"])
def test_via_compose_a_compose_path_the_client_would_expand_is_refused(client: str) -> None:
    build = _compose_build(client, out_dir="/srv/${USER}/build")
    refused = [r for r in build.results if r.code == "TG004"]
    assert len(refused) == 1 and "the compose file's path" in refused[0].message and build.blocked


def test_the_cli_builds_a_client_config_via_compose_into_out(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(COMPOSE_SPEC, encoding="utf-8")
    out = tmp_path / "client"
    done = run_cli("build", str(spec), "--target", "client", "--client", "cursor", "--via", "podman-compose", "--proxy-image", PROXY, "--out", str(out))
    assert done.returncode == 0, done.stderr
    servers = json.loads((out / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert servers["net"]["args"][3] == os.path.abspath(out / "compose" / "compose.yaml")
    assert (out / "compose" / "compose.yaml").is_file() and (out / "compose" / "net.squid.conf").is_file()
    wrong = run_cli("build", str(spec), "--target", "bwrap", "--via", "docker-compose", "--out", str(tmp_path / "b"))
    assert wrong.returncode == 2 and "the bwrap target takes no --via" in wrong.stderr, wrong.stderr
    bad = run_cli("build", str(spec), "--target", "client", "--client", "cursor", "--via", "compose", "--out", str(tmp_path / "c"))
    assert bad.returncode == 2 and "--via must be one of run, docker-compose, podman-compose" in bad.stderr
