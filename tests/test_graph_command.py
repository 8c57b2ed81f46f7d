"""`mcpspec graph` end to end through the real CLI, with the real Graphviz `dot`;
and the SARIF code flows of the graph rules."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conftest import EXAMPLES, REPO, SARIF_SCHEMA, require_tool, run_cli

RISKY = "examples/risky.yaml"
SVG = "{http://www.w3.org/2000/svg}"

# Host paths may hold quotes, brackets, pipes, '#', ';', '<', backslashes and
# spaces; tool names only [A-Za-z0-9_.-]. None of it may escape a label.
HOSTILE_PATH = '/srv/we"ird] dir\\N|x#y;<b>&amp; --> n0["pwned"] \\'
WEIRD = f"""\
version: 1
project: weird
agents:
  helper: {{servers: [web, notes]}}
servers:
  web:
    command: [mcp-fetch]
    placement: dedicated
    mounts:
      - {{from: '{HOSTILE_PATH}', to: /shared, mode: rw}}
    tools:
      fetch.v2-beta_x: {{effects: [reads_untrusted]}}
  notes:
    command: [mcp-notes]
    placement: dedicated
    mounts:
      - {{from: '{HOSTILE_PATH}', to: /notes}}
    tools:
      read: {{effects: [reads_private]}}
"""


def graph(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpspec", "graph", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False)


def server_names(spec: Path) -> list[str]:
    import yaml

    return sorted(yaml.safe_load(spec.read_text(encoding="utf-8"))["servers"])


@pytest.fixture
def weird(tmp_path: Path) -> Path:
    path = tmp_path / "weird.yaml"
    path.write_text(WEIRD, encoding="utf-8")
    return path


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_dot_output_renders_with_real_graphviz(example: Path) -> None:
    dot = require_tool("dot")
    result = graph(str(example), "--format", "dot")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('digraph "mcpspec" {')
    rendered = subprocess.run([dot, "-Tsvg"], input=result.stdout, capture_output=True, text=True, timeout=120, check=False)
    assert rendered.returncode == 0, rendered.stderr
    assert "Warning" not in rendered.stderr and "Error" not in rendered.stderr


def test_svg_holds_every_server_name(tmp_path: Path) -> None:
    require_tool("dot")
    out = tmp_path / "risky.svg"
    result = graph(RISKY, "--format", "svg", "--output", str(out))
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    root = ET.parse(out).getroot()
    assert root.tag == f"{SVG}svg"
    texts = {"".join(t.itertext()) for t in root.iter(f"{SVG}text")}
    for name in server_names(REPO / RISKY):
        assert name in texts, name


def test_hostile_path_is_shown_literally_by_graphviz(weird: Path) -> None:
    require_tool("dot")
    result = graph(str(weird), "--format", "svg")
    assert result.returncode == 0, result.stderr
    root = ET.fromstring(result.stdout)
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert HOSTILE_PATH in texts  # no \N expansion, no lost backslash, quotes kept
    nodes = [g for g in root.iter(f"{SVG}g") if g.get("class") == "node"]
    assert len(nodes) == 6  # agent, two servers, two tools, one path: nothing injected


def test_svg_without_graphviz_exits_2_and_says_how_to_get_it(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PATH"} | {"PATH": str(empty)}
    result = graph(RISKY, "--format", "svg", env=env)
    assert result.returncode == 2
    assert "apt-get install graphviz" in result.stderr and "--format dot" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


def test_dot_has_a_cluster_per_agent_and_per_placement() -> None:
    result = graph(RISKY)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    for number, agent in enumerate(["assistant", "reviewer"]):
        block = re.search(rf'subgraph "cluster_agent_{number}" {{\n\s+graph \[label="agent: {agent} ', text)
        assert block, agent
    assert 'subgraph "cluster_agent_0_sandbox"' in text and 'label="assistant sandbox (placement: agent)"' in text
    assert 'subgraph "cluster_dedicated"' in text and 'label="fetcher sandbox"' in text
    assert 'subgraph "cluster_external"' in text
    # The server placed in the agent's sandbox is drawn inside that cluster.
    sandbox = text[text.index('subgraph "cluster_agent_0_sandbox"') : text.index('subgraph "cluster_agent_1"')]
    assert '"server:shell" [' in sandbox and '"server:fetcher" [' not in sandbox


def dot_edges(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r'^  ("[^\n]*" -> "[^\n]*") \[(.*)\];$', text, re.M)}


def test_edges_are_styled_by_kind_and_attack_paths_stand_out(weird: Path) -> None:
    plain = dot_edges(graph(str(weird)).stdout)
    assert plain['"server:web" -> "path:/srv/we\\"ird] dir\\\\N|x#y;<b>&amp; --> n0[\\"pwned\\"] \\\\"'] == 'color="#e03131", style="bold", penwidth="2", label="rw"'
    assert plain['"server:web" -> "agent:helper"'] == 'color="#7048e8", style="dotted", arrowhead="none"'
    text = graph(RISKY).stdout
    edges = dot_edges(text)
    assert 'style="bold"' in edges['"server:shell" -> "path:~"'] and 'label="rw"' in edges['"server:shell" -> "path:~"']
    assert 'style="dashed"' in edges['"server:shell" -> "path:~/.ssh"']
    assert 'label="secret"' in edges['"server:fetcher" -> "secret:github-pat"']
    assert 'label="egress"' in edges['"server:fetcher" -> "dest:webhook.site:443"']
    # GR001 runs fetcher.fetch -> shell.search -> fetcher.fetch in agent 'assistant'.
    for edge in ('"server:fetcher" -> "agent:assistant"', '"server:shell" -> "agent:assistant"', '"server:fetcher" -> "tool:fetcher/fetch"'):
        assert 'color="#c00000"' in edges[edge] and 'penwidth="3"' in edges[edge], edge
        assert re.search(r'tooltip="attack path: [A-Z0-9, ]*GR001', edges[edge]), edge
    assert "#c00000" not in edges['"server:deployer" -> "tool:deployer/rollback"']
    assert "#c00000" not in edges['"server:shell" -> "path:~/.ssh"']


def test_node_colours_follow_the_worst_finding_that_involves_them() -> None:
    lint = subprocess.run([sys.executable, "-m", "mcpspec", "lint", RISKY, "-f", "json"], cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    results = [r for r in json.loads(lint.stdout)["results"] if r["suppression"] is None]
    order = ["error", "critical", "high", "medium", "low", "info"]
    fills = {"critical": "#ff6b6b", "high": "#ffa94d", "medium": "#ffe066", "low": "#a5d8ff", "info": "#e9ecef", None: "#ffffff"}
    text = graph(RISKY).stdout
    for name in server_names(REPO / RISKY):
        prefix = re.compile(rf"servers\.{re.escape(name)}(\.|\[|$)")
        involving = [r["severity"] for r in results if prefix.match(r["path"]) or any(prefix.match(h["path"]) for h in r["related"])]
        worst = min(involving, key=order.index) if involving else None
        line = re.search(rf'^\s+"server:{name}" \[(.*)\];$', text, re.M)
        assert line, name
        assert f'fillcolor="{fills[worst]}"' in line.group(1), (name, worst)
    assert re.search(r'"agent:assistant" \[[^\n]*fillcolor="#ff6b6b"', text)  # GR001 is critical


def test_mermaid_has_a_node_per_server_and_no_injected_text(weird: Path) -> None:
    result = graph(str(weird), "--format", "mermaid")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "flowchart LR"
    node = re.compile(r'^\s+(n\d+)(\[|\(\[|\{\{|\[/|\(\(|\[\[|\[\()"([^"]*)"(\]|\]\)|\}\}|/\]|\)\)|\]\]|\)\])$')
    edge = re.compile(r'^\s+n\d+ (==>\|"rw"\||-\.->\|"ro"\||-->\|"secret"\||-->\|"egress"\||-\.-|---|-\.->\|"contains"\|) n\d+$')
    other = re.compile(r'^\s+(subgraph c\d+\["[^"]*"\]|end|linkStyle [\d,]+ [a-z:#0-9,-]+|classDef sev-[a-z]+ [a-z:#0-9,-]+|class n\d+ sev-[a-z]+|%% [^\n]*)$')
    labels = []
    for line in lines[1:]:
        match = node.match(line)
        if match:
            labels.append(match.group(3))
            continue
        assert edge.match(line) or other.match(line), line
    assert len(labels) == 6
    assert sum(1 for label in labels if label.split("<br/>")[0] in ("web", "notes")) == 2
    assert "pwned" in result.stdout and '["pwned"]' not in result.stdout and "-->" not in "".join(labels)
    assert "fetch.v2-beta_x" in result.stdout


def test_mermaid_of_the_risky_example_names_every_server_once() -> None:
    text = graph(RISKY, "-f", "mermaid").stdout
    firsts = [m.group(1) for m in re.finditer(r'^\s+n\d+\["([^"<]*)<br/>', text, re.M)]
    assert sorted(firsts) == server_names(REPO / RISKY)


def test_json_has_findings_per_node_and_blast_radius_per_server() -> None:
    data = json.loads(graph(RISKY, "--format", "json").stdout)
    assert data["format_version"] == 1 and data["directed"] and data["multigraph"]
    nodes = {n["id"]: n for n in data["nodes"]}
    assert nodes["agent:assistant"]["worst"] == "critical"
    assert any(f["code"] == "GR001" for f in nodes["agent:assistant"]["findings"])
    assert nodes["server:shell"]["path"] == "servers.shell"
    assert sorted(data["blast_radius"]) == server_names(REPO / RISKY)
    shell = data["blast_radius"]["shell"]
    assert {"host_path": "/var/run/docker.sock", "mode": "rw", "path": "servers.shell.mounts[1]"} in shell["paths"]
    assert {"destination": "the internet", "path": "servers.shell.egress.default"} in shell["destinations"]
    assert [e for e in data["edges"] if e["attack_paths"]]


def test_output_is_deterministic_and_written_atomically(tmp_path: Path) -> None:
    for fmt in ("dot", "mermaid", "json"):
        first = graph(RISKY, "-f", fmt).stdout
        assert first == graph(RISKY, "-f", fmt).stdout, fmt
        out = tmp_path / f"graph.{fmt}"
        out.write_text("old", encoding="utf-8")
        result = graph(RISKY, "-f", fmt, "-o", str(out))
        assert (result.returncode, result.stdout) == (0, "")
        assert out.read_text(encoding="utf-8") == first
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary files left


def test_spec_errors_are_positioned_and_exit_1() -> None:
    result = graph("tests/corpus/demo-broken.yaml")
    assert result.returncode == 1
    assert result.stdout == ""
    assert re.match(r"tests/corpus/demo-broken\.yaml:\d+:\d+: SC001 unknown key 'idle_timout'", result.stderr)
    assert "^" in result.stderr and "Traceback" not in result.stderr


def test_usage_errors_exit_2_without_a_traceback(tmp_path: Path) -> None:
    missing = graph("no-such-file.yaml")
    assert missing.returncode == 2 and "no-such-file.yaml" in missing.stderr
    bad_format = graph(RISKY, "--format", "png")
    assert bad_format.returncode == 2 and "dot, mermaid, json, svg" in bad_format.stderr
    unwritable = graph(RISKY, "-o", str(tmp_path / "no" / "dir" / "out.dot"))
    assert unwritable.returncode == 2 and "cannot write" in unwritable.stderr
    for result in (missing, bad_format, unwritable):
        assert "Traceback" not in result.stderr


def test_graph_findings_carry_code_flows_in_sarif() -> None:
    fixture = "tests/rules/fixtures/GR001/fail_trifecta_across_two_servers.yaml"
    result = run_cli("lint", fixture, "--format", "sarif")
    log = json.loads(result.stdout)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    results = log["runs"][0]["results"]
    flows = [r for r in results if r["ruleId"].startswith("GR")]
    assert flows
    for item in flows:
        (flow,) = item["codeFlows"]
        (thread,) = flow["threadFlows"]
        steps = [step["location"] for step in thread["locations"]]
        related = item["relatedLocations"]
        assert [s["message"]["text"] for s in steps] == [r["message"]["text"] for r in related]
        assert [s["physicalLocation"]["region"]["startLine"] for s in steps] == [r["physicalLocation"]["region"]["startLine"] for r in related]
        assert [step["executionOrder"] for step in thread["locations"]] == list(range(1, len(steps) + 1))
    assert all("codeFlows" not in r for r in results if not r["ruleId"].startswith("GR"))
