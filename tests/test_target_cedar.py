"""The cedar target: ToolHive's and Docker Sandboxes' Cedar policies, validated and evaluated with cedarpy.

No gateway runs here: cedarpy (Cedar's own evaluator) decides each call as the gateway's Cedar
would, and `mcpspec run`'s gate (argument rules, then approval) is the verdict to compare with.
Every call the spec refuses must be denied, every call the policies allow must be one the spec
allows, and one they send to approval must be one the spec allows or approves.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import cedarpy
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cedar_eval import RANK, docker, docker_other, oracle, toolhive, toolhive_other
from conftest import EXAMPLES, run_cli
from mcpspec.api import load, load_text
from mcpspec.ir.plan import Plan
from mcpspec.spec.conditions import tests as arg_tests
from mcpspec.spec.models import HttpTransport
from mcpspec.targets import get_target, skeleton
from mcpspec.targets.base import BuildOptions, BuildOutput
from mcpspec.targets.build import MANIFEST, build_plan
from mcpspec.targets.cedar.docker import POLICY_FILE, SCHEMA_FILE
from mcpspec.targets.cedar.literal import string

TARGET = get_target("cedar")


def _build(plan: Plan) -> BuildOutput:
    return skeleton.build(TARGET, plan)


def _validate(files: Mapping[str, str]) -> None:
    """Every policy set the build wrote passes Cedar's validator against the schema written beside it."""
    for name, text in files.items():
        if name.endswith(".authz.json"):
            policies, schema = "\n".join(json.loads(text)["cedar"]["policies"]), files[name.replace(".authz.json", ".cedarschema.json")]
        elif name == POLICY_FILE:
            policies, schema = text, files[SCHEMA_FILE]
        else:
            continue
        result = cedarpy.validate_policies(policies, schema)
        assert result.validation_passed, (name, [str(error) for error in result.errors])


def _near_misses(name: str) -> Iterator[str]:
    yield name.upper() if name != name.upper() else name.lower()
    yield name + " "
    yield " " + name
    yield name + "\x00"
    yield "\uff41" + name[1:] if name[:1] == "a" else "\uff3f" + name  # fullwidth: NFKC folds it back
    yield unicodedata.normalize("NFD", "é") + name
    yield name + "*"
    yield "*"


def _samples(tool: Any) -> list[dict[str, Any] | None]:
    """Arguments that sit on each side of the tool's argument tests, and some no test expects."""
    calls: list[dict[str, Any] | None] = [None, {}]
    for rule in tool.when:
        for item in arg_tests(rule.if_):
            value = getattr(item, item.kind)
            for sample in (value, not value if isinstance(value, bool) else None, str(value), [value], {"v": value}):
                calls.append({item.arg: sample})
            if isinstance(value, str):
                wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)  # NFKC reads it as `value`
                calls += [{item.arg: wide}, {item.arg: unicodedata.normalize("NFKD", value) + "\u0301"}, {item.arg: value + " "}, {item.arg: value.upper()},
                          {item.arg: "\uff0f" + value}, {item.arg: value + "/../../etc"}, {item.arg: value * 2000}]
    return calls


def _check(plan: Plan, files: Mapping[str, str], server: str, tool: str, arguments: dict[str, Any] | None, exact: bool) -> None:
    sandbox = plan.servers[server]
    want = oracle(plan, sandbox, tool, arguments)
    stdio = not isinstance(sandbox.transport, HttpTransport)
    got_docker = docker(files[POLICY_FILE], server, tool, arguments, stdio)
    got_toolhive = toolhive(files[f"toolhive/{server}.authz.json"], server, tool, arguments)
    where = f"{server}/{tool!r} {arguments!r}: mcpspec run {want}, docker {got_docker}, toolhive {got_toolhive}"
    assert RANK[got_docker] <= RANK[want], where
    assert got_toolhive == "refuse" or want == "allow", where
    if exact:
        assert got_docker == want, where
        assert got_toolhive == ("allow" if want == "allow" else "refuse"), where


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_call_gets_the_verdict_mcpspec_run_gives_or_a_narrower_one(spec: Path) -> None:
    plan = load(spec, str(spec))
    output = _build(plan)
    _validate(output.files)
    built = [name for name, sandbox in plan.servers.items() if sandbox.runs_here]
    assert built and all(f"toolhive/{name}.authz.json" in output.files for name in built)
    for name in built:
        sandbox = plan.servers[name]
        for tool, declared in sandbox.tools.items():
            for arguments in _samples(declared):
                _check(plan, output.files, name, tool, arguments, exact=not declared.when)
        for tool in ("not_in_the_spec", *(miss for listed in sandbox.tools for miss in _near_misses(listed))):
            if tool not in sandbox.tools:
                _check(plan, output.files, name, tool, {}, exact=True)
        config = output.files[f"toolhive/{name}.authz.json"]
        assert not toolhive_other(config, "get_prompt", "Prompt", "greeting")
        assert not toolhive_other(config, "read_resource", "Resource", "file:///etc/passwd")
    policy = output.files[POLICY_FILE]
    assert not docker_other(policy, "getPrompt", "Prompt", {"name": "greeting"})
    assert not docker_other(policy, "readResource", "Resource", {"uri": "file:///etc/passwd"})
    assert not docker_other(policy, "invokePrimordial", "Primordial", {})
    assert not docker_other(policy, "register", "Server", {})


SPEC = """\
version: 1
project: acme
servers:
  files:
    command: [/usr/bin/files]
    tools:
      read_file: {effects: [reads_private]}
      delete_file: {effects: [destructive], approval: always}
"""


def test_a_near_miss_tool_name_is_denied() -> None:
    plan = load_text(SPEC, "mcp-sandbox.yaml")
    files = _build(plan).files
    assert docker(files[POLICY_FILE], "files", "read_file", {}) == "allow"
    assert docker(files[POLICY_FILE], "files", "delete_file", {}) == "approve"
    assert toolhive(files["toolhive/files.authz.json"], "files", "read_file", {}) == "allow"
    assert toolhive(files["toolhive/files.authz.json"], "files", "delete_file", {}) == "refuse"
    for miss in [*_near_misses("read_file"), *_near_misses("delete_file"), "read_file\n", "read-file", "ｒｅａｄ_file"]:
        assert docker(files[POLICY_FILE], "files", miss, {}) == "refuse", miss
        assert toolhive(files["toolhive/files.authz.json"], "files", miss, {}) == "refuse", miss
    # A tool of the same name on another server (Docker's one policy holds every server) is that server's business: denied here.
    assert docker(files[POLICY_FILE], "other", "read_file", {}) == "refuse"


HOSTILE = ['"', "\\", '\\"', 'x" || true || "', "a\nb", "a\rb", "\u2028", "\x00", "é", "e\u0301", "*", "a*", "\\*", "}; permit(principal, action, resource);//",
           "\U0001f600", "\u202e", "\t", "'"]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_names_and_values_stay_inside_their_literals(value: str) -> None:
    policy = f"permit(principal, action, resource) when {{ resource.name == {string(value)} }};"
    assert len(json.loads(cedarpy.policies_to_json_str(policy))["staticPolicies"]) == 1
    for name, allowed in ((value, True), (value + "x", False), ("x" + value, False), ("", False), ("true", False)):
        entities = [{"uid": {"type": "T", "id": "t"}, "attrs": {"name": name}, "parents": []}]
        request = {"principal": {"type": "P", "id": "p"}, "action": {"type": "A", "id": "a"}, "resource": {"type": "T", "id": "t"}, "context": {}}
        assert cedarpy.is_authorized(request, policy, entities).allowed is allowed, (value, name)
    # Through the spec: an argument's name (anything but NUL) and the value it must equal are the spec's free text.
    arg = value.replace("\x00", "0") + "n"
    spec = SPEC.replace("      read_file: {effects: [reads_private]}",
                        "      read_file:\n        effects: [reads_private]\n        otherwise: refuse\n"
                        f"        when: [{{if: {{arg: {json.dumps(arg, ensure_ascii=False)}, equals: {json.dumps(value, ensure_ascii=False)}}}, then: allow}}]")
    plan = load_text(spec, "mcp-sandbox.yaml")
    output = _build(plan)
    _validate(output.files)
    exact = unicodedata.normalize("NFKC", value) == value and "\x00" not in value  # `mcpspec run` never judges a NUL
    for arguments in ({arg: value}, {arg: value + "x"}, {"n": value}, {arg: [value]}, {}):
        _check(plan, output.files, "files", "read_file", arguments, exact=False)
        if arguments == {arg: value}:
            got = docker(output.files[POLICY_FILE], "files", "read_file", arguments)
            assert got == ("allow" if exact else "refuse"), (value, got)


def _rule_test() -> st.SearchStrategy[dict[str, Any]]:
    values = st.sampled_from(["main", "/workspace/out", "ﬁ", "e\u0301", "x*", 'q"'])
    return st.one_of(
        st.builds(lambda arg, value: {"arg": arg, "equals": value}, st.sampled_from(["a", "b"]), values),
        st.builds(lambda arg, value: {"arg": arg, "equals": value}, st.sampled_from(["c"]), st.booleans()),
        st.builds(lambda arg, value: {"arg": arg, "prefix": value}, st.sampled_from(["a", "b"]), st.sampled_from(["/w", "ma"])),
        st.builds(lambda arg, value: {"arg": arg, "equals": value}, st.sampled_from(["n"]), st.integers(0, 3)),
        st.builds(lambda arg: {"arg": arg, "equals": "main", "case": "insensitive"}, st.sampled_from(["a"])),
    )


def _condition(depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    if depth >= 2:
        return _rule_test()
    inner = st.deferred(lambda: _condition(depth + 1))
    return st.one_of(_rule_test(), st.builds(lambda c: {"not": c}, inner),
                     st.builds(lambda cs: {"all": cs}, st.lists(inner, min_size=1, max_size=2)),
                     st.builds(lambda cs: {"any": cs}, st.lists(inner, min_size=1, max_size=2)))


@st.composite
def _specs(draw: st.DrawFn) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(["read", "write", "Read", "run.x", "a-b"]), unique=True, max_size=3)):
        tool: dict[str, Any] = {"effects": draw(st.lists(st.sampled_from(["reads_private", "exec", "destructive"]), unique=True, min_size=1, max_size=2))}
        approval = draw(st.sampled_from([None, "always", "per-session", "never"]))
        if approval is not None:
            tool["approval"] = approval
        rules = draw(st.lists(st.builds(lambda c, then: {"if": c, "then": then}, _condition(), st.sampled_from(["allow", "approve", "refuse"])), max_size=3))
        otherwise = draw(st.sampled_from([None, "allow", "approve", "refuse"]))
        if rules:
            tool["when"] = rules
            if otherwise is not None:
                tool["otherwise"] = otherwise
        tools[name] = tool
    server: dict[str, Any] = {"command": ["/usr/bin/srv"], "tools": tools, "unlisted_tools": draw(st.sampled_from(["deny", "allow"]))}
    if draw(st.booleans()):
        server["transport"] = {"type": "http", "port": 8931}
    return {"version": 1, "project": "acme", "servers": {"srv": server}, "approvals": {"require": draw(st.sampled_from([[], ["exec"]]))}}


_ARGUMENT = st.one_of(st.sampled_from(["main", "ｍａｉｎ", "/workspace/out", "ﬁ", "fi", "é", "e\u0301", "x*", "xy", 'q"', "MAIN", "ma", "/w/x"]),
                      st.booleans(), st.integers(0, 3), st.just(["main"]), st.just({"k": "main"}))


@settings(max_examples=80, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_specs(), st.lists(st.tuples(st.sampled_from(["read", "write", "Read", "run.x", "a-b", "READ", "read "]),
                                    st.dictionaries(st.sampled_from(["a", "b", "c", "n", "c_present"]), _ARGUMENT, max_size=3)), min_size=1, max_size=6))
def test_generated_specs_never_get_a_wider_verdict_than_mcpspec_run(spec: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> None:
    plan = load_text(yaml.safe_dump(spec, sort_keys=False), "mcp-sandbox.yaml")
    output = _build(plan)
    _validate(output.files)
    tools = plan.servers["srv"].tools
    for tool, arguments in [*calls, *((name, sample) for name, declared in tools.items() for sample in _samples(declared))]:
        declared = tools.get(tool)
        _check(plan, output.files, "srv", tool, arguments, exact=declared is None or not declared.when)


RULES = """\
version: 1
project: acme
servers:
  git:
    command: [/usr/bin/git-mcp]
    tools:
      push:
        effects: [external_send]
        when:
          - {if: {arg: branch, equals: main}, then: refuse}
          - {if: {all: [{arg: branch, equals: preview}, {not: {arg: force, equals: true}}]}, then: allow}
          - {if: {arg: branch, equals: staging}, then: approve}
        otherwise: allow
"""


@pytest.mark.parametrize(("arguments", "docker_wants", "toolhive_wants"), [
    ({"branch": "main"}, "refuse", "refuse"),
    ({"branch": "ｍａｉｎ"}, "refuse", "refuse"),  # NFKC reads it as main: the refuse rule may fire, so `otherwise` is not reached
    ({"branch": "preview"}, "refuse", "refuse"),  # force missing: `not` of what cannot be judged never holds
    ({"branch": "preview", "force": False}, "allow", "allow"),
    ({"branch": "preview", "force": True}, "allow", "allow"),  # no rule fires: otherwise allow
    # A string is not the boolean: the allow rule's `not` is not judged, and Cedar cannot tell that no reading of it is true.
    ({"branch": "preview", "force": "true"}, "refuse", "refuse"),
    ({"branch": "ｐｒｅｖｉｅｗ"}, "refuse", "refuse"),  # `mcpspec run` would not allow it either (not every reading is preview)
    ({"branch": "staging"}, "approve", "refuse"),  # ToolHive cannot ask
    # Cedar cannot tell that no NFKC reading of a string the rules do not name is main: `otherwise` is not reached.
    ({"branch": "other"}, "refuse", "refuse"),
    ({"branch": ["preview"]}, "refuse", "refuse"),
    ({}, "refuse", "refuse"),
])
def test_argument_rules_allow_only_what_every_reading_allows(arguments: dict[str, Any], docker_wants: str, toolhive_wants: str) -> None:
    plan = load_text(RULES, "mcp-sandbox.yaml")
    files = _build(plan).files
    _validate(files)
    assert docker(files[POLICY_FILE], "git", "push", arguments) == docker_wants
    assert toolhive(files["toolhive/git.authz.json"], "git", "push", arguments) == toolhive_wants
    _check(plan, files, "git", "push", arguments, exact=False)
    # Docker's gateway passes no arguments of a remote server: the conditional permit never matches.
    assert docker(files[POLICY_FILE], "git", "push", arguments, stdio=False) == "refuse"


PROXY = "localhost/mcpspec-squid@sha256:" + "0" * 64


@pytest.mark.parametrize(("sandbox", "options"), [("bwrap", {}), ("compose", {"proxy_image": PROXY}), ("systemd", {}),
                                                  ("k8s", {"proxy_image": PROXY, "secret_store": "vault-example", "pod_pids_limit": 64})])
def test_a_paired_build_holds_the_sandbox_targets_files_and_levels(sandbox: str, options: dict[str, Any]) -> None:
    """With --sandbox every control but the call policy is that target's: its files (under its name) and its levels."""
    spec = EXAMPLES[[path.stem for path in EXAMPLES].index("coding-agent")]
    plan = load(spec, str(spec))
    alone = build_plan(plan, sandbox, options=BuildOptions(**options))
    paired = build_plan(plan, "cedar", options=BuildOptions(sandbox=sandbox, **options))
    theirs = {name: text for name, text in alone.files.items() if name != MANIFEST}
    assert {name.removeprefix(f"{sandbox}/"): text for name, text in paired.files.items() if name.startswith(f"{sandbox}/")} == theirs
    assert {name for name in paired.executable if name.startswith(f"{sandbox}/")} == {f"{sandbox}/{name}" for name in alone.executable}
    _validate(paired.files)
    mine, base = json.loads(paired.files[MANIFEST])["servers"], json.loads(alone.files[MANIFEST])["servers"]
    for server, entry in mine.items():
        assert entry["built"] == base[server]["built"]
        controls = dict(entry["controls"])
        assert controls.pop("call-policy", "partial") == "partial"
        assert controls == {c: level for c, level in base[server]["controls"].items() if c != "call-policy"}
    assert paired.blocked == alone.blocked


def test_sandbox_options_go_with_a_sandbox_the_target_takes() -> None:
    plan = load_text(SPEC, "mcp-sandbox.yaml")
    for options, message in ((BuildOptions(proxy_image=PROXY), "give --sandbox"), (BuildOptions(sandbox="client"), "--sandbox must be one of"),
                             (BuildOptions(sandbox="cedar"), "--sandbox must be one of"), (BuildOptions(sandbox="bwrap", proxy_image=PROXY), "takes no --proxy-image")):
        with pytest.raises(ValueError, match=message):
            build_plan(plan, "cedar", options=options)
    alone = build_plan(plan, "cedar")
    assert alone.blocked and {r.code for r in alone.active} >= {"TG001"}  # no boundary is the policies'


def test_the_command_line_writes_the_policies_beside_the_sandbox(tmp_path: Path) -> None:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    out = tmp_path / "out"
    done = run_cli("build", str(spec), "--target", "cedar", "--sandbox", "bwrap", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    files = {path.relative_to(out).as_posix(): path.read_text(encoding="utf-8") for path in out.rglob("*") if path.is_file()}
    assert {"bwrap/files.py", "toolhive/files.authz.json", POLICY_FILE, SCHEMA_FILE} <= set(files)
    _validate(files)
    assert docker(files[POLICY_FILE], "files", "read_file", {}) == "allow"
    assert toolhive(files["toolhive/files.authz.json"], "files", "delete_file", {}) == "refuse"


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_tool_or_server_name_names_only_itself(value: str) -> None:
    """Tool and server names the spec's patterns would refuse, written straight into both gateways' policies."""
    from mcpspec.targets.cedar import docker as docker_policy
    from mcpspec.targets.cedar import toolhive as toolhive_policy
    from mcpspec.targets.cedar.decide import Decided, ServerPolicy
    from mcpspec.targets.cedar.rules import FALSE, TRUE

    server, tool = "s" + value, "t" + value
    policy = ServerPolicy(server, [Decided(tool, TRUE, FALSE), Decided(tool + "!", FALSE, TRUE)], False, {})
    text = docker_policy.policy_text([policy])
    config = toolhive_policy.config(policy)
    assert len(json.loads(cedarpy.policies_to_json_str(text))["staticPolicies"]) == 3
    assert docker(text, server, tool, {}) == "allow" and docker(text, server, tool + "!", {}) == "approve"
    assert toolhive(config, server, tool, {}) == "allow" and toolhive(config, server, tool + "!", {}) == "refuse"
    for other in (tool + " ", tool.upper(), "t", tool + "x", "*", unicodedata.normalize("NFKC", tool) + "\u200b"):
        if other not in (tool, tool + "!"):
            assert docker(text, server, other, {}) == "refuse", other
            assert toolhive(config, server, other, {}) == "refuse", other
    assert docker(text, "s", tool, {}) == "refuse" and docker(text, server + " ", tool, {}) == "refuse"


def test_every_call_a_gateway_denies_where_mcpspec_run_would_not_is_reported() -> None:
    """Approval denied by ToolHive, rules Cedar cannot state, a ToolHive-only refusal: each a TG003 naming the tool."""
    spec = SPEC.replace("      delete_file: {effects: [destructive], approval: always}", """\
      delete_file: {effects: [destructive], approval: always}
      list: {effects: [reads_private], when: [{if: {arg: dir, prefix: /srv}, then: allow}]}
      mixed: {effects: [reads_private], when: [{if: {arg: mode, equals: r}, then: allow}, {if: {arg: mode, equals: w}, then: approve}], otherwise: refuse}
      flags: {effects: [reads_private], when: [{if: {arg: x_present, equals: true}, then: allow}], otherwise: refuse}
    unlisted_tools: allow""")
    build = build_plan(load_text(spec, "mcp-sandbox.yaml"), "cedar", options=BuildOptions(sandbox="bwrap"))
    messages = [r.message for r in build.results if r.code == "TG003"]
    assert any("list's argument rules" in m and "both gateways deny" in m and "prefix" in m for m in messages), messages
    assert any("flags's argument rules" in m and "ToolHive" in m for m in messages), messages
    assert any("delete_file, mixed, every tool the spec does not list" in m for m in messages), messages
    files = build.files
    assert docker(files[POLICY_FILE], "files", "mixed", {"mode": "w"}) == "approve"
    assert toolhive(files["toolhive/files.authz.json"], "files", "mixed", {"mode": "w"}) == "refuse"
    assert toolhive(files["toolhive/files.authz.json"], "files", "mixed", {"mode": "r"}) == "allow"
    assert docker(files[POLICY_FILE], "files", "flags", {"x_present": True}) == "allow"
    assert toolhive(files["toolhive/files.authz.json"], "files", "flags", {"x": [1]}) == "refuse"  # ToolHive's own marker, faked
    assert docker(files[POLICY_FILE], "files", "list", {"dir": "/srv"}) == "refuse"
    assert docker(files[POLICY_FILE], "files", "unlisted", {}) == "approve"


def test_an_argument_two_servers_type_differently_stops_the_build_at_tg004() -> None:
    """Docker Sandboxes' one policy (and its schema) types an argument one way across every server."""
    spec = """\
version: 1
project: acme
servers:
  one:
    command: [/usr/bin/one]
    tools:
      go: {effects: [reads_private], when: [{if: {arg: mode, equals: fast}, then: allow}], otherwise: refuse}
  two:
    command: [/usr/bin/two]
    tools:
      go: {effects: [reads_private], when: [{if: {arg: mode, equals: true}, then: allow}], otherwise: refuse}
"""
    build = build_plan(load_text(spec, "mcp-sandbox.yaml"), "cedar", options=BuildOptions(sandbox="bwrap"))
    assert build.blocked and [r.path for r in build.results if r.code == "TG004"] == [("servers", "two", "tools")]
