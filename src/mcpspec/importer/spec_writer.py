"""The imported spec as YAML text: safe defaults, the converted servers and secrets, one agent
for the client, written with ruamel.yaml so that comments mark every choice to review."""

from __future__ import annotations

import io
from typing import Any

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from mcpspec.importer.convert import Conversion
from mcpspec.importer.model import ImportedConfig
from mcpspec.importer.tidy import WIDTH, tidy

# The modeline names a copy of the schema beside the spec: its $id is not served (docs/schema.md).
SCHEMA_FILE = "mcp-sandbox.schema.json"
APPROVALS = ["deploy", "destructive", "external_send", "modify_access", "financial", "exports_data"]


def _flow(*pairs: tuple[str, Any]) -> CommentedMap:
    mapping = CommentedMap(pairs)
    mapping.fa.set_flow_style()
    return mapping


def defaults() -> CommentedMap:
    """Egress denied, no inherited env, no spawning, short-lived sandboxes, full audit."""
    out = CommentedMap()
    out["runtime"] = _flow(("user", 65532), ("memory", "512Mi"), ("cpus", 1.0), ("pids", 128), ("read_only_root", True))
    out["env"] = _flow(("inherit", "none"))
    out["egress"] = _flow(("default", "deny"))
    out["process"] = _flow(("allow", CommentedSeq()), ("listeners", False), ("background", _flow(("allowed", False))))
    out.yaml_add_eol_comment("REVIEW: servers that spawn programs need them listed", "process")
    teardown = _flow(("kill_processes", True), ("remove_workspace", True), ("revoke_secrets", True), ("copy_out", "artifacts"))
    out["lifecycle"] = CommentedMap([("mode", "per-session"), ("idle_timeout", "15m"), ("max_lifetime", "8h"), ("teardown", teardown)])
    out["logging"] = CommentedMap([("audit", True), ("redact", True), ("raw_prompts", False), ("full_output", False), ("sink", "stderr")])
    out["limits"] = _flow(("requests_per_minute", 60), ("call_timeout", "2m"))
    return out


def workspace() -> CommentedMap:
    out = CommentedMap()
    out["root"] = "/srv/mcp/workspaces"
    out.yaml_add_eol_comment("REVIEW: where each run's workspace lives on the host", "root")
    out["per_agent"] = True
    out["reset"] = "per-task"
    dirs = CommentedMap()
    dirs["input"] = _flow(("mode", "ro"))
    dirs["output"] = _flow(("mode", "rw"))
    dirs["tmp"] = _flow(("mode", "rw"), ("tmpfs", True), ("size", "1Gi"))
    dirs.yaml_add_eol_comment("the project the servers read", "input")
    out["dirs"] = dirs
    out["artifacts"] = CommentedSeq(["output/**"])
    out["artifacts"].fa.set_flow_style()
    return out


def agent_name(client: str) -> str:
    return client if client[0].isalpha() else f"agent-{client}"


def document(config: ImportedConfig, conversion: Conversion, project: str) -> CommentedMap:
    """The whole spec of an import."""
    spec = CommentedMap()
    spec["version"] = 1
    spec["project"] = project
    spec["description"] = f"MCP servers imported from a {config.client} config by mcpspec import."
    spec["protocol_revision"] = "2025-11-25"
    spec["defaults"] = defaults()
    spec["workspace"] = workspace()
    spec["agents"] = agents(config, conversion)
    if conversion.secrets:
        spec["secrets"] = CommentedMap(conversion.secrets)
        spec.yaml_set_comment_before_after_key("secrets", before="Credentials: names of environment variables, never values.")
    spec["servers"] = CommentedMap(conversion.servers)
    spec["approvals"] = CommentedMap([("require", _seq(APPROVALS)), ("show_arguments", True)])
    spec.yaml_set_start_comment(
        f"yaml-language-server: $schema={SCHEMA_FILE}\n"
        f"Write the schema beside it: mcpspec schema > {SCHEMA_FILE}\n"
        f"Imported by `mcpspec import --from {config.client}`.\n"
        "Review every line marked REVIEW or TODO, then run `mcpspec lint` on this file.\n"
        "No secret value was copied: secrets are read from environment variables."
    )
    return spec


def agents(config: ImportedConfig, conversion: Conversion) -> CommentedMap:
    agent = CommentedMap([("description", f"The {config.client} client's agent."), ("servers", _seq(conversion.agent_servers))])
    return CommentedMap([(agent_name(config.client), agent)])


def _seq(items: list[str]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def yaml() -> YAML:
    out = YAML()
    out.indent(mapping=2, sequence=4, offset=2)
    out.width = 4096
    return out


def dump(data: Any, width: int = 4096) -> str:
    stream = io.StringIO()
    out = yaml()
    out.width = width
    out.dump(_readable_as_written(data), stream)
    return stream.getvalue()


# ruamel folds a string at the first blank past its width, so a line can pass it by a word: fold well before WIDTH.
FOLD = WIDTH - 16


def dump_new(data: Any) -> str:
    """A new spec's text, laid out for yamllint's default config (an existing file is dumped as it was laid out):
    a flow collection too long for its line is written in block style, a long string folded."""
    _unflow(data, 0)
    plain = dump(data)
    # Long end-of-line comments go onto lines of their own first (ruamel would put one after the last
    # line of a string it folds); read back, they are comments before their keys, which folding keeps in place.
    unfolded = tidy(plain, FOLD, start=False)
    laid_out = tidy(dump(yaml().load(unfolded), width=FOLD))
    # The layout moves comments and folds lines, never a value: should it ever read otherwise, the plain dump is written.
    try:
        same = pyyaml.safe_load(laid_out) == pyyaml.safe_load(plain)
    except pyyaml.YAMLError:
        same = False
    return laid_out if same else plain


def _unflow(node: Any, indent: int) -> None:
    """Block style for every flow collection under ``node`` whose one-line form would pass WIDTH (``indent`` is its column)."""
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in children:
        if not isinstance(value, (CommentedMap, CommentedSeq)):
            continue
        prefix = indent + (len(str(key)) + 2 if isinstance(node, dict) else 2)
        if value.fa.flow_style() and prefix + len(dump(value).strip()) > FOLD:
            value.fa.set_block_style()
        _unflow(value, indent + 2)


_YAML_1_1: Any = pyyaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


def _readable_as_written(data: Any) -> Any:
    """``data`` with every string value that mcpspec's YAML 1.1 loader would read otherwise double-quoted.

    ruamel writes YAML 1.2, where ``yes``, ``on`` and ``:q`` are plain strings and NEL, LS and PS
    are ordinary characters; the spec loader (libyaml, YAML 1.1) reads the first two as booleans,
    refuses ``:q`` and ``?q``, and folds the breaks into spaces. Values are quoted in place, so the
    comments on their keys stay where they are; keys are names the converter already made safe.
    """
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in list(items):
        if isinstance(value, str) and not isinstance(value, DoubleQuotedScalarString) and _read_otherwise(value):
            data[key] = DoubleQuotedScalarString(value)
        else:
            _readable_as_written(value)
    return data


def _read_otherwise(text: str) -> bool:
    return (
        text[:1] in (":", "?")
        or "\x85" in text or "\u2028" in text or "\u2029" in text
        or _YAML_1_1.resolve(pyyaml.ScalarNode, text, (True, False)) != _STR_TAG
    )
