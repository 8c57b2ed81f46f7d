"""`mcpspec check --within` attacked: spec/boundary pairs the check passed while the artifacts the
spec builds reach, mount or keep what the boundary does not allow.

Each escape is shown twice: the check on the pair (exit 1 and the excess at its spec line), and,
where this machine can run it, the attack against the generated artifacts themselves (the spec's
launcher or squid lets it through; for the resolution case the boundary's own squid refuses it),
so a test that passes proves both that the escape is real and that the check now names it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from egress_lab import FAR_V4, PORT, Lab, make_lab, status
from mcpspec.api import load_text
from mcpspec.boundary.check import Excess, check
from mcpspec.targets.build import build_plan

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from harness import Listener, Sandbox, call_tools

import test_target_bwrap_real
from build_properties import specs

sandbox = test_target_bwrap_real.sandbox  # the fixture: bwrap, squid and the probe's SDK copy


def _check(spec: str, boundary: str) -> list[Excess]:
    return check(load_text(spec, "spec.yaml"), load_text(boundary, "boundary.yaml"))


def _server(body: str, top: str = "") -> str:
    return f"version: 1\nproject: p\n{top}servers:\n  fetch:\n    command: [fetch]\n{body}"


# --- egress.via: direct: the host network, whatever the entries say ---


def test_direct_egress_is_an_excess_whatever_its_entries() -> None:
    boundary = _server('    egress: {allow: ["*.acme.example:443", "198.18.0.0/15:443"], deny: ["@private"]}\n')
    for egress in ('{via: direct, allow: ["api.acme.example:443"]}', '{via: direct, allow: ["198.18.0.7:443"]}'):
        (excess,) = _check(_server(f"    egress: {egress}\n"), boundary)
        assert excess.code == "BX001" and excess.path == ("servers", "fetch", "egress", "via"), excess
        assert "egress.via: direct" in excess.message
    # An open boundary holds even a direct server; one with denies does not (bwrap filters nothing).
    assert _check(_server('    egress: {via: direct, allow: ["a.acme.example:443"]}\n'), _server("    egress: {default: allow}\n")) == []
    deny_both = "    egress: {default: allow, deny: ['@private', '@metadata']%s}\n"
    assert [e.code for e in _check(_server(deny_both % ", via: direct"), _server(deny_both % ""))] == ["BX001"]
    # No egress at all stays no network, even written with via: direct.
    assert _check(_server("    egress: {via: direct}\n"), boundary) == []


SITE = "    env: {set: {PYTHONPATH: /opt/site}}"


def test_a_direct_server_reaches_what_the_boundary_refuses_and_the_check_names_it(sandbox: Sandbox) -> None:
    allowed, denied = Listener("127.0.0.1"), Listener("127.0.0.2")
    try:
        spec = sandbox.spec("direct", f'{SITE}\n    egress: {{via: direct, allow: ["127.0.0.1:{allowed.port}"]}}')
        launcher = sandbox.build(spec, accept=("TG001",))
        (reached,) = call_tools(launcher, [("connect", {"host": "127.0.0.2", "port": denied.port})], {"MCPSPEC_RUN_ID": "run-a", "HOME": "/root"})
        assert reached["ok"] is True, reached  # the artifact lets the server reach 127.0.0.2
        text = spec.read_text(encoding="utf-8")
        boundary = text.replace("via: direct, ", "")  # the same ceiling, through the proxy
        found = check(load_text(text, str(spec)), load_text(boundary, "boundary.yaml"))
        assert [e.code for e in found] == ["BX001"], found
    finally:
        allowed.close()
        denied.close()


# --- a CIDR deny of the boundary refuses names that resolve into it ---


def test_a_name_both_allow_leaks_into_an_address_only_the_boundary_denies() -> None:
    boundary = _server('    egress: {allow: ["*.acme.example:443"], deny: ["8.8.8.0/24", "@private"]}\n')
    (excess,) = _check(_server('    egress: {allow: ["api.acme.example:443"]}\n'), boundary)
    assert excess.code == "BX001" and "api.acme.example:443 resolving to 8.8.8.0" in excess.message, excess
    # The spec denying the range too (or more of it) is contained; @private alone is refused for names anyway.
    assert _check(_server('    egress: {allow: ["api.acme.example:443"], deny: ["8.8.0.0/16"]}\n'), boundary) == []
    private_only = _server('    egress: {allow: ["*.acme.example:443"], deny: ["@private", "@metadata"]}\n')
    assert _check(_server('    egress: {allow: ["api.acme.example:443"]}\n'), private_only) == []
    # A deny on another port only matters on the ports the spec allows.
    other_port = _server('    egress: {allow: ["*.acme.example:443"], deny: ["8.8.8.0/24:25"]}\n')
    assert _check(_server('    egress: {allow: ["api.acme.example:443"]}\n'), other_port) == []
    # IPv6 too, and under a default allow.
    (v6,) = _check(_server("    egress: {default: allow}\n"), _server('    egress: {default: allow, deny: ["2606:4700::/32"]}\n'))
    assert "resolving to 2606:4700::" in v6.message, v6


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    item = make_lab()
    yield item
    item.close()


def _squid(egress: str) -> str:
    plan = load_text(_server(f"    egress: {egress}\n"), "lab.yaml")
    return build_plan(plan, "bwrap").files["fetch.squid.conf"]


def test_the_spec_squid_passes_a_name_the_boundary_squid_refuses_and_the_check_names_it(lab: Lab) -> None:
    spec, boundary = f'{{allow: ["far.test:{PORT}"]}}', f'{{allow: ["far.test:{PORT}"], deny: ["{FAR_V4.rsplit(".", 1)[0]}.0/24"]}}'
    request = f"CONNECT far.test:{PORT} HTTP/1.1\r\nHost: far.test:{PORT}\r\n\r\n"
    (through_spec,) = lab.answers(lab.squid_conf(_squid(spec), lab.own_networks()), [request])
    (through_boundary,) = lab.answers(lab.squid_conf(_squid(boundary), lab.own_networks()), [request])
    assert (status(through_spec), status(through_boundary)) == (200, 403)
    (excess,) = _check(_server(f"    egress: {spec}\n"), _server(f"    egress: {boundary}\n"))
    assert f"far.test:{PORT} resolving to" in excess.message, excess


# --- workspace dirs: where they live on the host, who shares them, how long they are kept ---

WORKSPACE = "workspace:\n  root: {root}\n  per_agent: {per_agent}\n  reset: {reset}\n  dirs:\n    output: {{mode: rw}}\n    tmp: {{mode: rw, tmpfs: true}}\n"
MOUNT = "    mounts:\n      - {from: workspace.output, to: /workspace/output}\n"


def _workspace(root: str = "/srv/mcp/workspaces", per_agent: str = "true", reset: str = "per-task", mount: str = MOUNT) -> str:
    return _server(mount, WORKSPACE.format(root=root, per_agent=per_agent, reset=reset))


def test_a_workspace_outside_the_boundary_root_shared_or_kept_is_an_excess() -> None:
    boundary = _workspace()
    assert _check(_workspace(root="/srv/mcp/workspaces/team"), boundary) == []
    for spec, path in ((_workspace(root="~/.config"), "root"), (_workspace(root="/srv/mcp/workspaces-x"), "root"),
                       (_workspace(per_agent="false"), "per_agent"), (_workspace(reset="never"), "reset")):
        (excess,) = _check(spec, boundary)
        assert excess.path == ("workspace", path), excess
    # A tmpfs dir is memory: its root does not matter, sharing and keeping still do.
    tmpfs = "    mounts:\n      - {from: workspace.tmp, to: /tmp}\n"
    assert _check(_workspace(root="/elsewhere", mount=tmpfs), _workspace(mount=tmpfs)) == []
    assert [e.path for e in _check(_workspace(per_agent="false", mount=tmpfs), _workspace(mount=tmpfs))] == [("workspace", "per_agent")]


def test_a_workspace_root_elsewhere_writes_outside_the_boundary_and_the_check_names_it(sandbox: Sandbox) -> None:
    spec = sandbox.spec("elsewhere", SITE)
    launcher = sandbox.build(spec)
    (written,) = call_tools(launcher, [("write_path", {"path": "/workspace/output/planted.txt", "data": "x"})], {"MCPSPEC_RUN_ID": "run-a", "HOME": "/root"})
    assert written["ok"] is True, written
    planted = sandbox.base / "ws-elsewhere" / "tester" / "run-a" / "output" / "planted.txt"
    assert planted.is_file()  # the write landed under the spec's root, outside the boundary's
    text = spec.read_text(encoding="utf-8")
    org_root = sandbox.base / "org-workspaces"
    assert org_root not in planted.parents
    boundary = text.replace(f"root: {sandbox.base}/ws-elsewhere", f"root: {org_root}")
    found = check(load_text(text, str(spec)), load_text(boundary, "boundary.yaml"))
    assert [(e.code, e.path) for e in found] == [("BX002", ("workspace", "root"))], found


# --- approvals: a tool whose effects the spec does not declare ---


def test_a_tool_with_undeclared_effects_runs_unapproved_and_the_check_names_it() -> None:
    """HR004: undeclared effects must be assumed to be any effect; `mcpspec run` relays such a tool's
    calls without asking, so against a boundary that requires approval of exec calls it is an excess."""
    from mcpspec.run.approvals import approval_mode

    boundary = "version: 1\nproject: org\napprovals: {require: [exec]}\nservers:\n  any-server:\n    command: [any]\n"
    spec = _server("    tools:\n      shell: {description: runs what it is given}\n      pure: {effects: [none]}\n      asked: {approval: always}\n")
    assert approval_mode(load_text(spec, "spec.yaml"), "fetch", "shell") is None  # the run asks nobody
    (excess,) = _check(spec, boundary)
    assert excess.code == "BX007" and excess.path[:4] == ("servers", "fetch", "tools", "shell"), excess
    assert "effects undeclared, so possibly exec" in excess.message


# --- process: a command the boundary denies, allowed by its path ---


def test_a_denied_command_allowed_by_its_path_is_an_excess() -> None:
    boundary = _server("    process: {allow: [git, tail, /usr/bin/curl], deny: [curl, /usr/bin/tail]}\n")
    for allow in ("[/usr/bin/curl]", "[tail]", "[/usr/local/bin/curl, git]"):
        found = _check(_server(f"    process: {{allow: {allow}}}\n"), boundary)
        assert [e.code for e in found] == ["BX006", "BX006"][: len(found)] and found, (allow, found)
    assert _check(_server("    process: {allow: [git], deny: [curl, /usr/bin/tail]}\n"), boundary) == []
    assert _check(_server("    process: {allow: [git, /usr/bin/curl], deny: [curl, /usr/bin/curl, /usr/bin/tail]}\n"), boundary) == []


def test_a_command_denied_by_name_runs_when_the_spec_allows_its_path_and_the_check_names_it(sandbox: Sandbox) -> None:
    spec = sandbox.spec("bypath", f"{SITE}\n    process: {{allow: [/usr/bin/tail, /usr/bin/python3]}}")
    launcher = sandbox.build(spec)
    (ran,) = call_tools(launcher, [("spawn", {"argv": ["/usr/bin/tail", "--version"]})], {"MCPSPEC_RUN_ID": "run-a", "HOME": "/root"})
    assert ran["ok"] is True and ran["status"] == 0, ran  # the artifact runs the program the boundary denies
    text = spec.read_text(encoding="utf-8")
    boundary = text.replace("process: {allow: [/usr/bin/tail, /usr/bin/python3]}", "process: {allow: [/usr/bin/tail, /usr/bin/python3], deny: [tail]}")
    found = check(load_text(text, str(spec)), load_text(boundary, "boundary.yaml"))
    assert [(e.code, e.path[-1]) for e in found] == [("BX006", "allow"), ("BX006", "deny")], found
    assert "may spawn /usr/bin/tail; the boundary allows only /usr/bin/python3" in found[0].message


# --- a tool's own limits ---


def test_a_tools_own_call_timeout_replaces_the_servers_and_is_held_to_the_boundary() -> None:
    boundary = _server("    limits: {call_timeout: 15m}\n    tools:\n      slow: {effects: [none], limits: {call_timeout: 1m, requests_per_minute: 5}}\n")
    spec = _server("    limits: {call_timeout: 10m}\n    tools:\n      build: {effects: [none], limits: {call_timeout: 24h}}\n      slow: {effects: [none]}\n")
    plan = load_text(spec, "spec.yaml")
    from mcpspec.run.limits import CallLimiter

    assert CallLimiter(plan.servers["fetch"]).timeout("build") == 86400  # what `mcpspec run` waits for one call
    found = _check(spec, boundary)
    # BX013 (per-tool limits): each at the line that sets the value, the server's where the tool sets none
    assert [(e.code, e.path[2:]) for e in found] == [
        ("BX013", ("tools", "build", "limits", "call_timeout")),
        ("BX013", ("limits", "call_timeout")),
        ("BX013", ("tools", "slow")),
    ], found
    assert "lets one call of build run 1d; the boundary allows 15m for it" in found[0].message
    assert "lets one call of slow run 10m; the boundary allows 1m" in found[1].message and "slow with no rate limit" in found[2].message
    within = _server("    limits: {call_timeout: 10m, requests_per_minute: 5}\n    tools:\n      build: {effects: [none], limits: {call_timeout: 5m}}\n      slow: {effects: [none], limits: {call_timeout: 30s}}\n")
    assert _check(within, boundary) == []


# --- file secrets: a host file copied into the sandbox ---


def test_a_file_secret_outside_the_boundarys_file_path_is_an_excess() -> None:
    boundary = "version: 1\nproject: org\nsecrets:\n  files: {provider: file, ref: /srv/mcp/secrets, ttl: none}\nservers:\n  any-server:\n    command: [any]\n    secrets:\n      - {use: files, as: {env: ANY}}\n"
    for ref, excess in (("/srv/mcp/secrets/token", False), ("/srv/mcp/secrets", False), ("~/.ssh/id_ed25519", True), ("/srv/mcp/secrets-old/token", True), ("/etc/shadow", True)):
        spec = _server("    secrets:\n      - {use: key, as: {env: KEY}}\n", f"secrets:\n  key: {{provider: file, ref: {ref}, ttl: none}}\n")
        assert [e.code for e in _check(spec, boundary)] == (["BX003"] if excess else []), ref


def test_a_file_secret_copies_a_host_file_the_boundary_keeps_out_and_the_check_names_it(sandbox: Sandbox) -> None:
    private = sandbox.base / "private-key"
    private.write_text("not-for-any-sandbox-5d2e", encoding="utf-8")
    private.chmod(0o600)
    spec = sandbox.spec("filesecret", f"{SITE}\n    secrets:\n      - {{use: key, as: {{file: /run/secrets/key}}}}", extra=f"secrets:\n  key: {{provider: file, ref: {private}, ttl: none}}")
    launcher = sandbox.build(spec)
    (read,) = call_tools(launcher, [("read_path", {"path": "/run/secrets/key"})], {"MCPSPEC_RUN_ID": "run-a", "HOME": "/root"})
    assert "not-for-any-sandbox-5d2e" in str(read), read  # the artifact hands the host file to the server
    text = spec.read_text(encoding="utf-8")
    boundary = text.replace(f"ref: {private}", f"ref: {sandbox.base}/org-secrets")
    found = check(load_text(text, str(spec)), load_text(boundary, "boundary.yaml"))
    assert [e.code for e in found] == ["BX003"], found


# --- identity and a writable root ---


def test_another_identity_or_a_writable_root_is_an_excess() -> None:
    boundary = _server("    runtime: {user: 65532}\n")
    assert _check(_server(""), boundary) == []  # the built-in default is 65532 on both sides
    found = _check(_server("    runtime: {user: 0, read_only_root: false}\n"), boundary)
    assert [(e.code, e.message.split(" runs with ")[-1].split(";")[0]) for e in found][:2] == [("BX006", "runtime.user 0"), ("BX006", "runtime.group 0")], found
    assert found[2].path[-1] == "read_only_root" and len(found) == 3, found


def test_another_uid_reads_a_mounted_file_the_boundarys_cannot_and_the_check_names_it(sandbox: Sandbox) -> None:
    """A root launcher runs bwrap as the spec's uid on the host: a uid of a real user reads that user's
    private files in every mount, which the boundary's identity (65532) cannot."""
    if os.geteuid() != 0:
        if os.environ.get("MCPSPEC_REQUIRE_REAL_TOOLS") == "1":
            pytest.fail("the launcher runs the spec's uid only when started as root (MCPSPEC_REQUIRE_REAL_TOOLS=1)")
        pytest.skip("the launcher runs the spec's uid only when started as root")
    private = sandbox.probe_dir / "owned-by-1000.txt"
    private.write_text("uid-1000-only-81c4", encoding="utf-8")
    os.chown(private, 1000, 1000)
    private.chmod(0o600)
    spec = sandbox.spec("uid", f"{SITE}\n    runtime: {{user: 1000}}")
    launcher = sandbox.build(spec)
    got = call_tools(launcher, [("identity", {}), ("read_path", {"path": "/probe/owned-by-1000.txt"})], {"MCPSPEC_RUN_ID": "run-a", "HOME": "/root"})
    assert got[0]["uid"] == 1000 and "uid-1000-only-81c4" in str(got[1]), got
    text = spec.read_text(encoding="utf-8")
    found = check(load_text(text, str(spec)), load_text(text.replace("    runtime: {user: 1000}\n", ""), "boundary.yaml"))
    assert [(e.code, e.path[-1]) for e in found] == [("BX006", "user"), ("BX006", "user")], found


def test_the_servers_own_program_is_held_to_the_boundarys_deny(sandbox: Sandbox) -> None:
    boundary = _server("    process: {deny: [sh, curl]}\n")
    shell = "version: 1\nproject: p\nservers:\n  fetch:\n    command: 'curl -s https://example.invalid | sh'\n    process: {allow: [git]}\n"
    (excess,) = _check(shell, boundary)
    assert "may spawn /bin/sh, which the boundary denies (sh)" in excess.message, excess
    assert _check(_server("    process: {allow: [git], deny: [sh, curl]}\n"), boundary) == []
    # For real: the probe server is /usr/bin/python3, which a boundary denying python3 keeps out.
    spec = sandbox.spec("ownprogram", f"{SITE}\n    process: {{allow: [git]}}")
    ran = call_tools(sandbox.build(spec), [("spawn", {"argv": ["/usr/bin/python3", "-c", "print(7 * 6)"]}), ("spawn", {"argv": ["tail", "--version"]})],
                     {"MCPSPEC_RUN_ID": "run-a", "HOME": "/root"})
    assert ran[0]["ok"] is True and ran[0]["stdout"].strip() == "42", ran
    assert ran[1]["ok"] is True and ran[1]["status"] == 0, ran  # process.allow: [git] is not enforced
    text = spec.read_text(encoding="utf-8")
    for denied, said in (("python3", "python3, which the boundary denies"), ("tail", "tail, which the boundary denies (process.allow is not enforced")):
        found = check(load_text(text, str(spec)), load_text(text.replace("process: {allow: [git]}", f"process: {{allow: [git], deny: [{denied}]}}"), "boundary.yaml"))
        assert [e.code for e in found] == ["BX006"] and said in found[0].message, found


def test_under_cilium_a_name_reaches_the_private_ranges_the_spec_lists_so_the_check_counts_them() -> None:
    """k8s --egress cilium excepts the spec's own CIDR entries from its egressDeny of the refused
    ranges, and its toFQDNs rule lets a name reach them: a boundary deny there is not covered."""
    from mcpspec.targets.egress import egress_plan
    from mcpspec.targets.k8s.network import cilium_policy

    spec = _server('    egress: {allow: ["db.acme.example:443", "10.0.0.0/8:5432"]}\n')
    plan = load_text(spec, "spec.yaml")
    policy = cilium_policy(plan, plan.servers["fetch"], egress_plan(plan.servers["fetch"]))
    assert policy is not None
    denied = policy["spec"]["egressDeny"][0]["toCIDRSet"]
    assert {"cidr": "10.0.0.0/8"} not in denied and not any(d["cidr"] == "10.0.0.0/8" for d in denied)  # the name may resolve into 10/8
    boundary = _server('    egress: {allow: ["db.acme.example:443", "10.0.0.0/8:5432"], deny: ["10.0.0.0/8:443"]}\n')
    (excess,) = _check(spec, boundary)
    assert "db.acme.example:443 resolving to 10.0.0.0" in excess.message, excess


# --- placement: agent: the agent's network, not the server's egress ---


def test_a_server_placed_in_the_agents_pod_gets_the_agents_network_and_the_check_names_it() -> None:
    from mcpspec.targets.grants import ANY
    from mcpspec.targets.k8s.reader import read_build

    waiver = "waivers:\n  - {rule: TG001, at: servers.fetch, reason: red team, expires: 2099-01-01}\nagents:\n  coder: {servers: [fetch]}\n"
    spec = _server('    placement: agent\n    image: ghcr.io/acme/fetch@sha256:' + "a" * 64 + '\n    egress: {allow: ["api.acme.example:443"]}\n', waiver)
    built = build_plan(load_text(spec, "spec.yaml"), "k8s")
    grants = read_build(built.files)["fetch"]
    assert grants.egress.default == "allow" and ANY in grants.egress.allow, grants.egress  # what the manifests let it reach
    (excess,) = _check(spec, _server('    egress: {allow: ["*.acme.example:443"]}\n'))
    assert excess.code == "BX001" and excess.path == ("servers", "fetch", "placement") and "placement: agent" in excess.message, excess


# --- every target, read back: a server the check holds to its own text gets no wider egress ---


@settings(max_examples=int(os.environ.get("MCPSPEC_REDTEAM_EXAMPLES", "100")), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])

def _filtered(node: object) -> object:
    """The spec with every ``via: direct`` read as ``via: proxy`` and ``placement: agent`` as dedicated."""
    if isinstance(node, dict):
        out = {key: _filtered(value) for key, value in node.items()}
        if out.get("via") == "direct":
            out["via"] = "proxy"
        if out.get("placement") == "agent":
            out["placement"] = "dedicated"
        return out
    if isinstance(node, list):
        return [_filtered(item) for item in node]
    return node

@given(specs())
def test_every_build_of_a_server_the_check_passes_reaches_no_more_than_its_text(spec: dict[str, object]) -> None:
    """The spec is its own boundary, each server its own ceiling read as written: where the check
    finds no egress excess, no target's artifacts (read back from the files alone) let the server
    reach more than its entries say, whatever TG finding the target reports about it."""
    import json

    from build_properties import READERS, _check_egress, build_all, dump, effective
    from mcpspec.targets.build import MANIFEST

    text = dump(spec)
    plan = load_text(text, "mcp-sandbox.yaml")
    # The ceiling as written: the same entries, filtered (a ceiling that is itself direct or placed in the
    # agent allows everything, so the spec read against itself would say nothing about its entries).
    flagged = {e.server for e in check(plan, load_text(dump(_filtered(spec)), "ceiling.yaml")) if e.code == "BX001"}
    problems: list[str] = []
    for target, build in build_all(text).items():
        grants = READERS[target](build.files)
        for name, entry in json.loads(build.files[MANIFEST])["servers"].items():
            if not entry["built"] or name not in grants or name in flagged:
                continue
            egress = effective(spec, name)["egress"]
            allow, deny = list(egress["allow"] or []), list(egress["deny"] or [])
            found = _check_egress(grants[name], egress, allow, deny, {"egress-deny": "full"})
            opened = egress["default"] == "allow"  # every destination is the spec's, whatever network the rule names
            problems += [f"{target}/{name}: {p}" for p in found if not (opened and p.startswith("egress to "))]
    assert not problems, "\n".join(problems) + "\n\nspec:\n" + text
