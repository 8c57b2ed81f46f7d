from __future__ import annotations

import textwrap

import pytest

from mcpspec.api import load_text
from mcpspec.diagnostics import SpecError
from mcpspec.ir.plan import Plan

BASE = """\
version: 1
project: demo
defaults:
  runtime: {memory: 256Mi, pids: 64}
  lifecycle:
    idle_timeout: 15m
    teardown: {copy_out: none}
  process:
    package_install: {allowed: true, registries: [pypi]}
workspace:
  root: /srv/ws/
  dirs:
    input: {mode: ro}
    out: {mode: rw}
    tmp: {mode: rw, tmpfs: true, size: 64Mi}
secrets:
  token: {provider: env, ref: TOKEN, ttl: 1h, scopes: [read]}
agents:
  coder: {servers: [repo, web]}
servers:
  repo:
    command: [python, -m, repo]
    runtime: {memory: 1Gi}
    process:
      package_install: {registries: [npm]}
      allow: [git]
    mounts:
      - {from: workspace.input, to: /in}
      - {from: workspace.tmp, to: /tmp//scratch/}
      - {from: "~/.cache//tool/", to: /cache}
    secrets:
      - {use: token, as: {env: API_TOKEN}}
  web:
    command: npx -y thing
    transport: {type: http, port: 8080}
"""


def plan_of(text: str) -> Plan:
    return load_text(textwrap.dedent(text), "spec.yaml")


def errors_of(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        plan_of(text)
    return [d.format() for d in caught.value.diagnostics]


def test_server_fields_win_over_defaults_which_win_over_builtins() -> None:
    repo = plan_of(BASE).servers["repo"]
    assert repo.resources.memory == 1024**3
    assert repo.resources.pids == 64
    assert repo.identity.uid == 65532 and repo.identity.gid == 65532
    assert repo.lifecycle.idle_timeout == 900
    assert repo.lifecycle.teardown.copy_out == "none"
    assert repo.lifecycle.teardown.kill_processes is True


def test_nested_sections_merge_field_by_field() -> None:
    install = plan_of(BASE).servers["repo"].process.package_install
    assert install.allowed is True
    assert install.registries == ("npm",)


def test_each_resolved_field_remembers_the_line_that_set_it() -> None:
    plan = plan_of(BASE)
    repo = plan.servers["repo"]
    assert repo.origin("runtime.memory") == ("servers", "repo", "runtime", "memory")
    assert repo.origin("runtime.pids") == ("defaults", "runtime", "pids")
    assert plan.source.value_span(repo.origin("runtime.pids")).line == 4
    assert plan.source.value_span(repo.origin("lifecycle.idle_timeout")).line == 6
    assert repo.origin("process.package_install.allowed") == ("defaults", "process", "package_install", "allowed")
    assert repo.origin("process.package_install.registries") == ("servers", "repo", "process", "package_install", "registries")
    # A built-in default has no line of its own: it points at the server.
    assert plan.source.key_span(repo.origin("lifecycle.max_lifetime")).line == 21


def test_workspace_dirs_become_mounts_under_a_per_agent_run_dir() -> None:
    mounts = plan_of(BASE).servers["repo"].mounts
    assert [(m.kind, m.source, m.location, m.target, m.mode, m.size) for m in mounts] == [
        ("workspace", "input", "/srv/ws/{agent}/{run_id}/input", "/in", "ro", 0),
        ("tmpfs", "tmp", "/srv/ws/{agent}/{run_id}/tmp", "/tmp/scratch", "rw", 64 * 1024**2),
        ("home", ".cache/tool", "~/.cache/tool", "/cache", "ro", 0),
    ]


def test_secrets_are_bound_by_reference_never_by_value() -> None:
    (grant,) = plan_of(BASE).servers["repo"].secrets
    assert (grant.name, grant.provider, grant.ref, grant.env, grant.file, grant.ttl) == ("token", "env", "TOKEN", "API_TOKEN", None, 3600)


def test_agents_shell_commands_and_http_bind_are_resolved() -> None:
    plan = plan_of(BASE)
    web = plan.servers["web"]
    assert plan.agents == {"coder": ("repo", "web")}
    assert web.agents == ("coder",)
    assert web.command == ("/bin/sh", "-c", "npx -y thing") and web.command_is_shell
    assert web.transport.type == "http" and getattr(web.transport, "bind", None) == "127.0.0.1"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("use: token", "use: tokn"), "spec.yaml:32:15: SC005 server 'repo' uses secret 'tokn', which is not defined under 'secrets' (defined: token)"),
        (("servers: [repo, web]", "servers: [repo, wbe]"), "spec.yaml:19:27: SC005 agent 'coder' uses server 'wbe'"),
        (("from: workspace.input", "from: workspace.inputs"), "spec.yaml:28:16: SC005 workspace has no dir 'inputs' (defined: input, out, tmp)"),
        (("{from: workspace.input, to: /in}", "{from: workspace.input, to: /in, mode: rw}"), "spec.yaml:28:48: SC006 workspace.dirs.input is read-only"),
        (("to: /cache}", "to: /in}"), "spec.yaml:30:39: SC006 mounts[0] already mounts something at /in"),
        (("port: 8080}", "bind: 0.0.0.0}"), "spec.yaml:35:5: SC006 server 'web' serves HTTP: give the 'port'"),
        (("tmp: {mode: rw, tmpfs: true, size: 64Mi}", "tmp: {mode: rw, size: 64Mi}"), "spec.yaml:15:21: SC006 workspace.dirs.tmp.size: only a tmpfs directory"),
        (("ref: TOKEN,", "ref: 'not a var',"), "spec.yaml:17:31: SC004 secrets.token.ref: provider env needs an environment variable name"),
        # Python's `$` also matches before a final newline: every reference pattern must match the whole value.
        (("ref: TOKEN,", "ref: \"TOKEN\\n\","), "spec.yaml:17:31: SC004 secrets.token.ref: provider env needs an environment variable name"),
        (("    command: [python, -m, repo]\n", ""), "spec.yaml:21:3: SC006 server 'repo' needs 'command'"),
    ],
)
def test_broken_references_and_contradictions_are_positioned(change: tuple[str, str], expected: str) -> None:
    old, new = change
    assert old in BASE
    messages = errors_of(BASE.replace(old, new, 1))
    assert any(message.startswith(expected) for message in messages), messages


def test_external_servers_may_not_claim_things_only_a_launched_server_has() -> None:
    text = BASE.replace("  web:\n    command: npx -y thing\n    transport: {type: http, port: 8080}\n",
                        "  web:\n    placement: external\n    command: [x]\n    transport: {type: http, url: 'https://mcp.example.com/'}\n")
    assert errors_of(text) == ["spec.yaml:35:5: SC006 server 'web' is external (mcpspec does not run it), so 'command' would have no effect; remove it or change placement"]


def test_waivers_must_point_at_something_in_the_file() -> None:
    good = BASE + "waivers:\n  - {rule: NW004, at: 'servers.repo.mounts[2]', reason: ok, expires: 2027-01-01}\n"
    assert plan_of(good).waivers[0].at == "servers.repo.mounts[2]"
    bad = good.replace("mounts[2]", "mounts[9]")
    assert errors_of(bad) == ["spec.yaml:37:23: SC005 waiver points at servers.repo.mounts[9], which is not in this file"]


def test_reference_errors_are_reported_alongside_schema_errors() -> None:
    text = BASE.replace("idle_timeout: 15m", "idle_timout: 15m").replace("use: token", "use: tokn")
    messages = errors_of(text)
    assert [m.split(" ", 2)[:2] for m in messages] == [["spec.yaml:6:5:", "SC001"], ["spec.yaml:32:15:", "SC005"]]


def test_pruning_never_invents_missing_definitions() -> None:
    # The secret lacks its required 'ref': its definition cannot be validated, so the
    # server's reference to it must not be reported as undefined.
    text = BASE.replace("token: {provider: env, ref: TOKEN, ttl: 1h, scopes: [read]}", "token: {provider: env, ttl: 1h}")
    messages = errors_of(text)
    assert len(messages) == 1 and "SC002 missing required key 'ref'" in messages[0]
