"""Import never grants more than the client config did, in any target.

For every client config under tests/clients, what the client gave each server is read here,
apart from the importer (its own small readers of JSON, TOML and YAML): the words of its command,
args and env, the hosts those name, the host paths it named, its tool filter. The imported spec is
then built for every target, and no artifact may hold a tool, host, mount or flag beyond that.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5
import pytest
import yaml

from conftest import REPO

CLIENT_DIR = REPO / "tests" / "clients"
CONFIGS = sorted(path for path in CLIENT_DIR.iterdir() if path.suffix in (".json", ".toml", ".yaml"))
TARGETS = ("bwrap", "systemd", "compose", "k8s", "client")
CLIENT_TARGET = {"claude_desktop_config": "claude-desktop", "claude-code": "claude-code", "vscode": "vscode", "cursor": "cursor", "codex": "codex"}
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/\s]*@)?([A-Za-z0-9.-]+\.[A-Za-z]{2,})")
_HOST_PORT = re.compile(r"\b((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}):\d+\b")
_DANGEROUS_PATHS = ("docker.sock", "podman.sock", "/.aws", "/.ssh", "/.kube", "/.config/gcloud")


@dataclass
class Had:
    """What the client config gave one server."""

    words: set[str] = field(default_factory=set)  # every string of its command, args, env, url, headers
    allow: set[str] | None = None  # the tools it shows, when it filters
    deny: set[str] = field(default_factory=set)

    @property
    def hosts(self) -> set[str]:
        text = " ".join(self.words)
        return {host.lower() for host in _URL.findall(text) + _HOST_PORT.findall(text)}

    def shows(self, tool: str) -> bool:
        return tool not in self.deny and (self.allow is None or tool in self.allow)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [word for item in value for word in _strings(item)]
    if isinstance(value, dict):
        return [word for item in value.values() for word in _strings(item)]
    return []


def what_the_client_had(path: Path) -> dict[str, Had]:
    """Each server's grants, by the client's own server name, read from the file alone."""
    text = path.read_text(encoding="utf-8")
    data: Any = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text) if path.suffix == ".yaml" else json5.loads(text)
    block: Any = data.get("mcp_servers") or data.get("servers") or data.get("context_servers") or data.get("mcpServers") or {}
    if isinstance(data.get("mcp"), dict):
        block = data["mcp"].get("servers", block)
    if isinstance(block, list):  # continue: a list of named entries
        block = {str(entry.get("name")): entry for entry in block if isinstance(entry, dict)}
    for project in (data.get("projects") or {}).values():  # ~/.claude.json
        block.update({f"{Path(str(project)).name}-{name}": entry for name, entry in (project.get("mcpServers") or {}).items()})
    had: dict[str, Had] = {}
    for name, entry in block.items():
        if not isinstance(entry, dict):
            continue
        server = had[str(name)] = Had()
        for key in ("command", "args", "env", "url", "serverUrl", "httpUrl", "headers", "http_headers"):
            server.words.update(_strings(entry.get(key)))
        allow = entry.get("enabled_tools", entry.get("includeTools"))
        server.allow = set(allow) if isinstance(allow, list) else None
        server.deny = set(entry.get("disabled_tools") or []) | set(entry.get("excludeTools") or []) | set(entry.get("disabledTools") or [])
    return had


def _spec_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", name).lower()).strip("-")


def _all_catalog_tools() -> set[str]:
    from mcpspec.catalog import entries

    return {tool.name for entry in entries() for tool in entry.tools}


def _catalog_hosts() -> set[str]:
    from mcpspec.catalog import entries

    text = " ".join(" ".join([*entry.egress, *entry.command, *entry.urls]) for entry in entries())
    return {host.lower() for host in _URL.findall(text) + _HOST_PORT.findall(text)}


def _build(spec: Path, target: str, client: str | None) -> dict[str, str]:
    from mcpspec import api
    from mcpspec.targets.base import BuildOptions

    options = BuildOptions(client=client) if target == "client" else None
    outcome = api.build_file(spec, target, build_options=options, out_dir=spec.parent / target)
    # A build a finding blocks is never written; what it would write is what a waiver would let out.
    assert outcome.build is not None, [r.message for r in outcome.lint.results]
    return outcome.build.files


def _commands(target: str, files: dict[str, str]) -> dict[str, list[str]]:
    """Each server's command as the artifact runs it (after the target's own wrapper)."""
    found: dict[str, list[str]] = {}
    if target == "bwrap":
        for name, text in files.items():
            if name.endswith(".py"):
                config = ast.literal_eval(text[text.index("CONFIG = ") + len("CONFIG = ") : text.index("\n}\n") + 2])
                found[config["server"]] = list(config["command"])
    elif target == "compose":
        for name, service in _services(files).items():
            words = [str(word).replace("$$", "$") for word in [*(service.get("entrypoint") or []), *(service.get("command") or [])]]  # compose's escape of $
            if "--" in words:
                found[name] = words[words.index("--") + 1 :]
    elif target == "k8s":
        for document in _k8s_documents(files):
            for container in document.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                words = [str(word).replace("$$", "$") for word in [*(container.get("command") or []), *(container.get("args") or [])]]  # Kubernetes' escape of $
                if "--" in words:
                    found[container["name"]] = words[words.index("--") + 1 :]
    return found


def _services(files: dict[str, str]) -> dict[str, Any]:
    """The compose file's services (a build with no server for compose writes none)."""
    return (yaml.safe_load(files["compose.yaml"]).get("services") or {}) if "compose.yaml" in files else {}


def _k8s_documents(files: dict[str, str]) -> list[dict[str, Any]]:
    return [document for name, text in files.items() if name.endswith(".yaml") for document in yaml.safe_load_all(text) if isinstance(document, dict)]


def _mount_sources(target: str, files: dict[str, str]) -> list[str]:
    """Every host path a target binds into a sandbox, as the artifact writes it."""
    sources: list[str] = []
    if target == "bwrap":
        for name, text in files.items():
            if name.endswith(".py"):
                config = ast.literal_eval(text[text.index("CONFIG = ") + len("CONFIG = ") : text.index("\n}\n") + 2])
                sources += [mount["source"] for mount in config["mounts"] if mount["kind"] in ("host", "home")]
    elif target == "systemd":
        for text in files.values():
            for line in re.findall(r"^(?:Bind|BindReadOnly)Paths=(.*)$", text, re.MULTILINE):
                sources += [part.split(":", 1)[0].lstrip("-") for part in line.split()]
    elif target == "compose":
        for service in _services(files).values():
            for volume in service.get("volumes") or []:
                if isinstance(volume, dict) and volume.get("type") == "bind":
                    sources.append(str(volume["source"]))
                elif isinstance(volume, str):
                    sources.append(volume.split(":", 1)[0])
    elif target == "k8s":
        sources += [str(volume["hostPath"]["path"]) for document in _k8s_documents(files) for volume in _find(document, "volumes") if "hostPath" in volume]
    return sources


def _find(node: Any, key: str) -> list[Any]:
    """Every item of every list under ``key`` anywhere in ``node``."""
    if isinstance(node, dict):
        return [*(node.get(key) if isinstance(node.get(key), list) else []), *(item for value in node.values() for item in _find(value, key))]
    if isinstance(node, list):
        return [item for value in node for item in _find(value, key)]
    return []


def _runtime_source(source: str) -> bool:
    """A path the target itself owns: a run's workspace dir, its runtime dir, a file of the build."""
    return source.startswith(("%t/", "/run/mcp", "/srv/mcp/workspaces", "${MCPSPEC_RUN_DIR", "./", "/usr", "/etc/mcpspec"))


@pytest.fixture(scope="module")
def catalog_tools() -> set[str]:
    return _all_catalog_tools()


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_imported_spec_built_for_every_target_grants_nothing_the_client_config_did_not(config: Path, tmp_path: Path, catalog_tools: set[str]) -> None:
    from mcpspec.importer.run import import_config

    had = {_spec_name(name): server for name, server in what_the_client_had(config).items()}
    assert had, f"no servers read from {config.name}"
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(import_config(config, "auto", "demo").text, encoding="utf-8")
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    others = set().union(*(server.hosts for path in CONFIGS if path != config for server in what_the_client_had(path).values()))
    own_hosts = set().union(*(server.hosts for server in had.values()))
    foreign_hosts = (_catalog_hosts() | others) - own_hosts
    shown_anywhere = {tool for server in had.values() for tool in catalog_tools if server.shows(tool)}
    for name, server in had.items():
        listed = set(data["servers"][name].get("tools") or {})
        assert {tool for tool in listed if not server.shows(tool)} == set(), f"{config.name}: server {name} lists tools the client hid"
        allowed = set(data["servers"][name].get("egress", {}).get("allow") or [])
        assert {entry.rsplit(":", 1)[0].strip("[]") for entry in allowed} <= server.hosts, f"{config.name}: server {name} allows {allowed}"
    client = next((value for key, value in CLIENT_TARGET.items() if config.name.startswith(key)), None)
    for target in TARGETS:
        if target == "client" and client is None:
            continue
        files = _build(spec, target, client)
        text = "\n".join(files.values())
        # Tools: none the client hid, in any artifact (the client target writes each server's tool list).
        hidden = {tool for tool in catalog_tools - shown_anywhere if re.search(rf"(?<![\w-]){re.escape(tool)}(?![\w-])", text)}
        assert hidden == set(), f"{config.name} -> {target}: tools the client did not show: {hidden}"
        # Hosts: no catalog host, and no host of another client's config, unless this client named it.
        leaked = {host for host in foreign_hosts if re.search(rf"(?<![\w.-]){re.escape(host)}(?![\w-]|\.\w)", text)}
        assert leaked == set(), f"{config.name} -> {target}: hosts the client config did not name: {leaked}"
        for allowed_host in re.findall(r"acl (?:listed|name)_\d+ dstdomain -n (\S+)", text):
            assert allowed_host.lstrip(".") in own_hosts, f"{config.name} -> {target}: the proxy allows {allowed_host}"
        # Mounts: only the target's own dirs; never a host path, least of all a socket or credential dir.
        bound = [source for source in _mount_sources(target, files) if not _runtime_source(source)]
        assert bound == [], f"{config.name} -> {target}: host paths bound in: {bound}"
        assert not [path for path in _DANGEROUS_PATHS for source in _mount_sources(target, files) if path in source]
        # Flags and arguments: each command word is the client's, the installed program, or the workspace for a host path.
        for name, command in _commands(target, files).items():
            server = had[name]
            # The spec's meaning of the editor's workspace folder is its mounted input (docs/import.md).
            given = server.words | {word.replace("${workspaceFolder}", "/workspace/input") for word in server.words}
            added = [word for word in command[1:] if word not in given and word != "/workspace/input" and not word.startswith("${")]
            assert added == [], f"{config.name} -> {target}: server {name} runs with arguments the client did not give: {added}"
        _assert_no_target_grant(target, files)


def _assert_no_target_grant(target: str, files: dict[str, str]) -> None:
    """The target itself adds no host namespace, privilege or device."""
    if target == "compose":
        for name, service in _services(files).items():
            assert not service.get("privileged") and not service.get("cap_add") and not service.get("devices"), name
            assert service.get("network_mode") != "host" and service.get("pid") != "host" and service.get("ipc") != "host", name
    elif target == "k8s":
        for document in _k8s_documents(files):
            pod = document.get("spec", {}).get("template", {}).get("spec", {})
            assert not any(pod.get(key) for key in ("hostNetwork", "hostPID", "hostIPC")), document.get("metadata")
            for container in pod.get("containers", []):
                context = container.get("securityContext", {})
                assert not context.get("privileged") and not context.get("capabilities", {}).get("add"), container["name"]


def test_the_realistic_configs_hold_what_the_grant_test_must_catch() -> None:
    """The configs the grant test reads have the things a careless import would widen: a tool filter,
    a database URL, docker run flags, and catalog servers whose catalog names other hosts and flags."""
    had = {path.name: what_the_client_had(path) for path in CONFIGS}
    codex = had["codex-realistic-config.toml"]
    assert codex["github"].allow and codex["github"].deny and "db.internal" in codex["postgres"].hosts
    desktop = had["claude_desktop_config-realistic.json"]
    assert "--privileged" in desktop["github"].words and "/var/run/docker.sock:/var/run/docker.sock" in desktop["github"].words
    assert "api.github.com" in _catalog_hosts() and "db.acme.example" in _catalog_hosts()
    assert "ghe.acme-corp.internal" in had["vscode-realistic-mcp.json"]["github"].hosts


def test_the_imported_servers_proxy_lets_through_the_host_the_client_named_and_refuses_the_catalogs(tmp_path: Path) -> None:
    """The attack on the real proxy: the server asks squid (with the rules the bwrap build of the imported
    spec writes) for the catalog's GitHub API host, which the client config never named; the host it did
    name answers. The control: the same request through the rules of a spec that allows the catalog's
    host (what import wrote before) is not refused, so the refusal below is the import's doing."""
    import json

    from egress_lab import FAR_V4, PORT, make_lab, status
    from mcpspec.api import load_text
    from mcpspec.importer.run import import_config
    from mcpspec.targets.build import build_plan

    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {"gh": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                                        "env": {"GITHUB_API_URL": f"http://far.test:{PORT}/api/v3"}}}}), encoding="utf-8")
    text = import_config(config, "auto", "demo").text
    assert yaml.safe_load(text)["servers"]["gh"]["egress"]["allow"] == [f"far.test:{PORT}"]
    catalog_allowed = text.replace(f"allow: [far.test:{PORT}]", f"allow: [far.test:{PORT}, api.github.com:443]")
    assert catalog_allowed != text
    requests = [f"GET http://far.test:{PORT}/ HTTP/1.1\r\nHost: far.test:{PORT}\r\nConnection: close\r\n\r\n",
                "CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\nConnection: close\r\n\r\n"]
    lab = make_lab()
    try:
        # The catalog's host names the lab's far end (which has nothing on 443), so no lookup leaves the lab.
        with (lab.base / "hosts").open("a", encoding="utf-8") as hosts:
            hosts.write(f"{FAR_V4} api.github.com\n")
        answers = {}
        for label, spec in (("imported", text), ("control", catalog_allowed)):
            rules = build_plan(load_text(spec, "mcp-sandbox.yaml"), "bwrap").files["gh.squid.conf"]
            answers[label] = lab.answers(lab.squid_conf(rules, lab.own_networks()), requests)
    finally:
        lab.close()
    assert status(answers["imported"][0]) == 200 and "far-service" in answers["imported"][0], answers["imported"][0]
    assert status(answers["imported"][1]) == 403, answers["imported"][1]
    assert status(answers["control"][1]) == 503, answers["control"][1]  # let through, and nothing listens there
