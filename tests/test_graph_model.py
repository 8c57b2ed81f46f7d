"""The trust graph's blast-radius query and the graph renderers, in process:
escaping, involvement of nodes in findings, JSON round trip through networkx."""

from __future__ import annotations

import json
import re
from pathlib import Path

import networkx
import pytest

from conftest import EXAMPLES
from mcpspec.analysis.graph import TrustGraph, blast_radius, build
from mcpspec.api import load, load_text
from mcpspec.diagnostics import format_path
from mcpspec.report import graph as graph_render
from mcpspec.report.graph import dot, mermaid, view_model
from mcpspec.rules.facts import contains
from mcpspec.rules.pipeline import LintOptions, lint_plan

SMALL = """\
version: 1
project: demo
agents:
  helper: {servers: [web, notes, runner, shell]}
secrets:
  api-key: {provider: env, ref: API_KEY}
servers:
  web:
    command: [mcp-fetch]
    placement: dedicated
    mounts:
      - {from: /srv/shared, to: /shared, mode: rw}
      - {from: /srv/docs, to: /docs}
    secrets:
      - {use: api-key, as: {env: API_KEY}}
    egress:
      default: deny
      allow: ["docs.example.com:443"]
    tools:
      fetch: {effects: [reads_untrusted]}
  notes:
    command: [mcp-notes]
    placement: agent
    mounts:
      - {from: /srv/shared/notes, to: /notes}
    tools:
      read: {effects: [reads_private]}
  runner:
    command: [mcp-run]
    placement: agent
    egress: {default: allow}
    tools:
      run: {effects: [exec]}
  shell:
    command: [mcp-shell]
    placement: dedicated
    tools:
      sh: {effects: [exec]}
"""


def small_graph() -> TrustGraph:
    return build(load_text(SMALL, "small.yaml"))


def test_blast_radius_of_a_writer_reaches_its_resources_and_the_servers_behind_shared_paths() -> None:
    assert blast_radius(small_graph(), "web") == {
        "server": "web",
        "path": "servers.web",
        "secrets": [{"name": "api-key", "path": "servers.web.secrets[0]"}],
        "paths": [
            {"host_path": "/srv/docs", "mode": "ro", "path": "servers.web.mounts[1]"},
            {"host_path": "/srv/shared", "mode": "rw", "path": "servers.web.mounts[0]"},
        ],
        "destinations": [{"destination": "docs.example.com:443", "path": "servers.web.egress.allow[0]"}],
        "agents": [{"agent": "helper", "path": "agents.helper.servers"}],
        "servers": [
            {
                "server": "notes",
                "path": "servers.web.mounts[0]",
                "via": [
                    {"node": "path:/srv/shared", "note": "web writes /srv/shared", "path": "servers.web.mounts[0]"},
                    {"node": "server:notes", "note": "notes reads /srv/shared/notes", "path": "servers.notes.mounts[0]"},
                ],
            },
            {
                "server": "runner",
                "path": "servers.web.mounts[0]",
                "via": [
                    {"node": "path:/srv/shared", "note": "web writes /srv/shared", "path": "servers.web.mounts[0]"},
                    {"node": "server:notes", "note": "notes reads /srv/shared/notes", "path": "servers.notes.mounts[0]"},
                    {
                        "node": "server:runner",
                        "note": "runner shares the agent sandbox (and its files and network) with notes",
                        "path": "servers.runner.placement",
                    },
                ],
            },
        ],
    }


def test_blast_radius_of_open_egress_names_the_internet_and_namespace_peers() -> None:
    graph = small_graph()
    runner = blast_radius(graph, "runner")
    assert runner["destinations"] == [{"destination": "the internet", "path": "servers.runner.egress.default"}]
    assert [s["server"] for s in runner["servers"]] == ["notes"]
    assert runner["secrets"] == runner["paths"] == []
    # A read-only reader reaches nothing through the paths it only reads.
    assert [s["server"] for s in blast_radius(graph, "notes")["servers"]] == ["runner"]
    assert blast_radius(graph, "shell")["servers"] == []
    with pytest.raises(KeyError):
        blast_radius(graph, "nope")


def naive_flows(graph: TrustGraph, start: str) -> dict[str, int]:
    """Servers reachable from ``start`` and the hop count of the shortest way, by plain BFS
    over every pair of overlapping mounts and shared sandboxes (the definition flows_from must meet)."""
    def steps(server: str) -> set[str]:
        found = {peer for peer in graph.namespace_peers(server)}
        for mine in graph.mounts_of(server):
            if mine.writable:
                for other in graph.plan.servers:
                    if other != server and any(
                        contains(mine.source, theirs.source) or contains(theirs.source, mine.source) for theirs in graph.mounts_of(other)
                    ):
                        found.add(other)
        return found

    depth = {start: 0}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for server in frontier:
            for target in sorted(steps(server)):
                if target not in depth:
                    depth[target] = depth[server] + 1
                    following.append(target)
        frontier = following
    del depth[start]
    return depth


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_flows_and_blast_radius_match_a_naive_search(example: Path) -> None:
    graph = build(load(example))
    for server in graph.plan.servers:
        expected = naive_flows(graph, server)
        reached = {target: hops for target, hops in graph.flows_from(server)}
        assert {target: sum(hop.node.startswith("server:") for hop in hops) for target, hops in reached.items()} == expected
        assert [s["server"] for s in blast_radius(graph, server)["servers"]] == sorted(expected)


def test_blast_radius_is_deterministic_across_builds() -> None:
    assert json.dumps(blast_radius(small_graph(), "web")) == json.dumps(blast_radius(small_graph(), "web"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_json_round_trips_into_the_same_networkx_graph(example: Path) -> None:
    plan = load(example)
    graph = build(plan)
    data = json.loads(graph_render.render(graph_render.view(graph, lint_plan(plan, LintOptions())), "json"))
    loaded = networkx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
    expected = graph.to_networkx()
    assert sorted(loaded.nodes) == sorted(expected.nodes)
    for node, attrs in expected.nodes(data=True):
        assert (loaded.nodes[node]["kind"], loaded.nodes[node]["label"], loaded.nodes[node]["path"]) == (attrs["kind"], attrs["label"], format_path(attrs["path"]))
    got_edges = sorted((u, v, d["kind"], d["path"]) for u, v, d in loaded.edges(data=True))
    want_edges = sorted((u, v, d["kind"], format_path(d["path"])) for u, v, d in expected.edges(data=True))
    assert got_edges == want_edges
    assert sorted(data["blast_radius"]) == sorted(plan.servers)


def test_findings_involve_the_nodes_their_paths_and_hops_name() -> None:
    graph = small_graph()
    involved = graph_render.involved_nodes
    assert involved(graph, ("servers", "web")) == {"server:web"}
    assert involved(graph, ("servers", "web", "tools", "fetch", "effects")) == {"server:web", "tool:web/fetch"}
    assert involved(graph, ("servers", "web", "mounts", 0, "mode")) == {"server:web", "path:/srv/shared"}
    assert involved(graph, ("servers", "web", "secrets", 0)) == {"server:web", "secret:api-key"}
    assert involved(graph, ("servers", "runner", "egress", "default")) == {"server:runner", "dest:internet"}
    assert involved(graph, ("secrets", "api-key", "ttl")) == {"secret:api-key"}
    assert involved(graph, ("agents", "helper")) == {"agent:helper"}
    assert involved(graph, ("approvals", "show_arguments")) == set()


def test_nodes_take_the_worst_severity_and_graph_findings_mark_their_edges() -> None:
    plan = load_text(SMALL.replace("fetch: {effects: [reads_untrusted]}", "fetch: {effects: [reads_untrusted, external_send], approval: never}"), "small.yaml")
    shown = graph_render.view(build(plan), lint_plan(plan, LintOptions()))
    gr001 = [r for r in shown.results if r.code == "GR001"]
    assert gr001, "the fixture should hold the lethal trifecta"
    for node in shown.nodes:
        found = shown.findings.get(node.id, [])
        expected = min((r.severity for r in found), key=["error", "critical", "high", "medium", "low", "info"].index) if found else None
        assert shown.worst(node.id) == expected
    assert shown.worst("agent:helper") == "critical"
    assert shown.fill("agent:helper") == view_model.SEVERITY_FILL["critical"]
    marked = {(e.source, e.target) for e in shown.attack}
    assert ("server:web", "agent:helper") in marked and ("server:notes", "agent:helper") in marked
    assert ("server:web", "tool:web/fetch") in marked
    assert ("server:shell", "agent:helper") not in marked  # shell is not on the chain
    assert all("GR001" in shown.attack[e] for e in shown.attack if (e.source, e.target) in {("server:web", "agent:helper"), ("server:notes", "agent:helper")})
    assert all(code.startswith("GR") for codes in shown.attack.values() for code in codes)


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("ends with \\", '"ends with \\\\"'),
        ("\\N and \\l", '"\\\\N and \\\\l"'),
        ("two\nlines", '"two\\nlines"'),
    ],
)
def test_dot_quote_keeps_text_literal(text: str, quoted: str) -> None:
    assert dot.dot_quote(text) == quoted


def test_mermaid_text_leaves_no_character_that_ends_a_label_or_starts_markup() -> None:
    hostile = '/srv/a "b"] c|d#e;f<b>g</b>&amp;`h`\\i\nj{k}(l) --> n0["x"]'
    escaped = mermaid.mermaid_text(hostile)
    assert re.fullmatch(r"[A-Za-z0-9 _.,:/~*@+=!?'#;-]*", escaped)
    assert '"' not in escaped and "]" not in escaped and "<" not in escaped and "\n" not in escaped and "|" not in escaped
    decoded = re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), escaped)
    assert decoded == hostile


def test_open_egress_and_egress_to_a_writable_host_imply_external_send() -> None:
    text = SMALL.replace('allow: ["docs.example.com:443"]', 'allow: ["docs.example.com:443", "*.ngrok.io:443"]')
    graph = build(load_text(text, "small.yaml"))
    runner = graph.implied_effects("runner")
    assert [(i.effect, i.hop, format_path(i.path)) for i in runner] == [("external_send", "open egress", "servers.runner.egress.default")]
    web = graph.implied_effects("web")
    assert [(i.effect, i.hop, format_path(i.path)) for i in web] == [("external_send", "egress to a host anyone can write to", "servers.web.egress.allow[1]")]
    assert small_graph().implied_effects("web") == ()
    assert graph.implied_effects("shell") == ()  # egress denied, nothing allowed
