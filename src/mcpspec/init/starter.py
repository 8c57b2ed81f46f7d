"""Build a commented starter spec from catalog entries; every choice a person must review is marked `# REVIEW:`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from mcpspec.catalog import Entry

REVIEW = "REVIEW: "
DEFAULT_SERVERS = ("filesystem",)
# The schema's $id is not served yet (docs/schema.md): the modeline names a copy beside the spec.
SCHEMA_FILE = "mcp-sandbox.schema.json"
_APPROVE = ["deploy", "destructive", "external_send", "modify_access", "financial", "exports_data"]


def project_name(directory_name: str) -> str:
    """A valid spec name (lowercase letters, digits and '-', at most 40) from a directory's name."""
    name = re.sub(r"[^a-z0-9]+", "-", directory_name.lower()).strip("-")
    name = re.sub(r"^[^a-z]+", "", name)[:40].rstrip("-")
    return name or "my-project"


def _flow(items: Sequence[object]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _flow_map(**items: object) -> CommentedMap:
    mapping = CommentedMap(items)
    mapping.fa.set_flow_style()
    return mapping


def _comment(node: CommentedMap | CommentedSeq, key: str | int, text: str) -> None:
    # column 0: one space before every comment (render_starter widens it to two, as yamllint wants).
    node.yaml_add_eol_comment(text, key, column=0)


def _review(mapping: CommentedMap, key: str, text: str) -> None:
    _comment(mapping, key, REVIEW + text)


def _defaults(project: str) -> CommentedMap:
    defaults = CommentedMap()
    defaults["runtime"] = _flow_map(user=65532, memory="512Mi", cpus=1.0, pids=128, read_only_root=True)
    defaults["env"] = _flow_map(inherit="none")
    defaults["egress"] = _flow_map(default="deny")
    defaults["process"] = _flow_map(allow=_flow([]), listeners=False, background=_flow_map(allowed=False))
    lifecycle = CommentedMap()
    lifecycle["mode"] = "per-task"
    lifecycle["idle_timeout"] = "15m"
    lifecycle["max_lifetime"] = "4h"
    lifecycle["teardown"] = _flow_map(kill_processes=True, remove_workspace=True, revoke_secrets=True, copy_out="artifacts")
    defaults["lifecycle"] = lifecycle
    logging = CommentedMap()
    logging["audit"] = True
    logging["redact"] = True
    logging["raw_prompts"] = False
    logging["full_output"] = False
    logging["sink"] = f"/var/log/mcp/{project}/audit.jsonl"
    _review(logging, "sink", "where your audit logs are collected")
    defaults["logging"] = logging
    defaults["limits"] = _flow_map(requests_per_minute=60, call_timeout="2m")
    return defaults


def _workspace() -> CommentedMap:
    workspace = CommentedMap()
    workspace["root"] = "/srv/mcp/workspaces"
    _review(workspace, "root", "a directory of the machine that runs the sandboxes")
    workspace["per_agent"] = True
    workspace["reset"] = "per-task"
    dirs = CommentedMap()
    dirs["input"] = _flow_map(mode="ro")
    _comment(dirs, "input", "what the agent works on (the project), read-only")
    dirs["output"] = _flow_map(mode="rw")
    _comment(dirs, "output", "what servers write; copied out at the end")
    dirs["tmp"] = _flow_map(mode="rw", tmpfs=True, size="1Gi")
    workspace["dirs"] = dirs
    workspace["artifacts"] = _flow(["output/**"])
    return workspace


def server_section(entry: Entry) -> CommentedMap:
    """The `servers.<name>` section for a catalog entry, with its REVIEW comments (import can reuse it)."""
    server = CommentedMap()
    server["description"] = entry.description
    server["kind"] = entry.kind
    server["trust"] = "third-party"
    _review(server, "trust", "vetted once you have read the server's code or trust its publisher")
    server["placement"] = "dedicated"
    _comment(server, "placement", "its own sandbox, away from the agent's other servers")
    server["transport"] = _flow_map(type="stdio")
    server["package"] = _flow_map(registry=entry.package.registry, name=entry.package.name, version=entry.package.version)
    note = "pinned by the catalog; upgrade deliberately"
    if entry.archived:
        note += "; the upstream project is archived"
    _review(server, "package", note)
    server["command"] = _flow(list(entry.command))
    env = _env(entry)
    if env is not None:
        server["env"] = env
    if entry.mounts:
        mounts = CommentedSeq()
        for index, mount in enumerate(entry.mounts):
            mounts.append(_flow_map(**{"from": mount.source, "to": mount.to}))
            _comment(mounts, index, f"{mount.mode}: {mount.why}")
        server["mounts"] = mounts
    if entry.credential is not None:
        server["secrets"] = CommentedSeq([_flow_map(use=entry.credential.secret, **{"as": _flow_map(env=entry.credential.env)})])
    egress = CommentedMap()
    egress["default"] = "deny"
    egress["allow"] = _flow(list(entry.egress))
    if entry.egress:
        egress["via"] = "proxy"
        _review(egress, "allow", "what the server must reach, nothing more")
    else:
        _review(egress, "allow", "none needed" if entry.kind not in ("search", "browser") else "list the sites it may reach (host:port)")
    server["egress"] = egress
    tools = CommentedMap()
    for tool in entry.tools:
        spec_tool = CommentedMap()
        spec_tool["description"] = tool.description
        spec_tool["effects"] = _flow(list(tool.effects))
        if tool.approval is not None:
            spec_tool["approval"] = tool.approval
        tools[tool.name] = spec_tool
    server["tools"] = tools
    server["unlisted_tools"] = "deny"
    _comment(server, "unlisted_tools", "tools not listed above are hidden; delete the listed ones the agent does not need")
    return server


def _env(entry: Entry) -> CommentedMap | None:
    values: dict[str, str] = {}
    if entry.name == "memory":
        values["MEMORY_FILE_PATH"] = "/workspace/output/memory.jsonl"
    if entry.name == "slack":
        values["SLACK_TEAM_ID"] = "T00000000"
        values["SLACK_CHANNEL_IDS"] = "C00000000"
    if not values:
        return None
    env = CommentedMap()
    env_set = CommentedMap(values)
    for key in values:
        if entry.name == "slack":
            _review(env_set, key, "your workspace's id" if key == "SLACK_TEAM_ID" else "the channels the agent may read, comma-separated")
    env["set"] = env_set
    return env


def secret_section(entry: Entry) -> CommentedMap | None:
    """The `secrets.<name>` section of a catalog entry's least-privilege credential, or None."""
    credential = entry.credential
    if credential is None:
        return None
    secret = CommentedMap()
    secret["provider"] = "env"
    secret["ref"] = credential.env
    _review(secret, "ref", "the variable that holds it where the sandbox starts (vault or file in production)")
    secret["description"] = credential.description
    secret["scopes"] = "none" if credential.scopes == "none" else _flow(list(credential.scopes))
    _review(secret, "scopes", credential.advice)
    secret["ttl"] = credential.ttl
    secret["rotation"] = _flow_map(on_exposure=True)
    return secret


def _secrets(chosen: Sequence[Entry]) -> CommentedMap:
    secrets = CommentedMap()
    for entry in chosen:
        secret = secret_section(entry)
        if secret is not None and entry.credential is not None:
            secrets[entry.credential.secret] = secret
    return secrets


def build_starter(project: str, chosen: Sequence[Entry]) -> CommentedMap:
    """The starter document for `project` with the chosen catalog servers, one agent using them all."""
    doc = CommentedMap()
    doc["version"] = 1
    doc["project"] = project
    _review(doc, "project", "taken from the directory's name")
    doc["description"] = f"Sandboxes for the MCP servers of {project}."
    doc["protocol_revision"] = "2025-11-25"
    doc["defaults"] = _defaults(project)
    doc["workspace"] = _workspace()
    agents = CommentedMap()
    agent = CommentedMap()
    agent["description"] = "The assistant of this project."
    agent["servers"] = _flow([entry.name for entry in chosen])
    _review(agent, "servers", "one agent sees all these tools together: split agents that need not share them")
    agents["assistant"] = agent
    doc["agents"] = agents
    secrets = _secrets(chosen)
    if secrets:
        doc["secrets"] = secrets
        doc.yaml_set_comment_before_after_key("secrets", before="Credentials: names and shapes only, never values.")
    servers = CommentedMap()
    for entry in chosen:
        servers[entry.name] = server_section(entry)
        if entry.review:
            servers.yaml_set_comment_before_after_key(entry.name, before="\n".join(REVIEW + line for line in entry.review), indent=2)
    doc["servers"] = servers
    approvals = CommentedMap()
    approvals["require"] = _flow(list(_APPROVE))
    approvals["show_arguments"] = True
    doc["approvals"] = approvals
    doc.yaml_set_start_comment(
        f"yaml-language-server: $schema={SCHEMA_FILE}\n"
        f"Starter written by `mcpspec init` for {project}.\n"
        "Every line marked REVIEW is a choice a person must check; `mcpspec lint` then tells what is left."
    )
    return doc
