"""Egress presets (@metadata, @private, ...): one table for the resolver, the rules, the targets and the docs."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, run_cli
from mcpspec.api import load
from mcpspec.diagnostics import SpecError
from mcpspec.presets import METADATA, PRESETS, PRIVATE
from mcpspec.rules.network import metadata_endpoint_reachable, private_range_from_untrusted_reader
from mcpspec.targets.egress import egress_plan, squid_rules

SPEC = """version: 1
project: demo
servers:
  crawler:
    kind: search
    command: [mcp-crawler]
    egress:
      default: allow
      deny: {deny}
    tools:
      crawl: {{effects: [reads_untrusted]}}
"""


def write(tmp_path: Path, deny: str) -> Path:
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(SPEC.format(deny=deny), encoding="utf-8")
    return spec


def test_a_preset_is_expanded_in_the_plan_and_keeps_its_place(tmp_path: Path) -> None:
    plan = load(write(tmp_path, '["10.9.8.7/32", "@metadata", "@private"]'))
    egress = plan.servers["crawler"].egress
    texts = [entry.text for entry in egress.deny]
    assert texts[0] == "10.9.8.7/32" and len(texts) == 1 + len(METADATA.destinations()) + len(PRIVATE.destinations())
    assert "169.254.169.254/32" in texts and "metadata.google.internal:*" in texts and "10.0.0.0/8" in texts
    assert all(entry.port is None for entry in egress.deny)
    assert [index for index, _ in egress.written("deny")] == [0, 1, 2]
    assert {entry.preset for entry in egress.deny[1:]} == {"metadata", "private"}
    data = json.loads(run_cli("plan", str(tmp_path / "mcp-sandbox.yaml")).stdout)
    shown = data["servers"]["crawler"]["egress"]["deny"]
    assert shown["from"] == "servers.crawler.egress.deny" and "fd00:ec2::254/128" in shown["value"]


def test_the_rules_ask_for_exactly_the_presets(tmp_path: Path) -> None:
    """NW001 and NW003 are silent once the preset they name is denied, and fire with one of its entries missing."""
    plan = load(write(tmp_path, '["@metadata", "@private"]'))
    assert list(metadata_endpoint_reachable.check(plan)) == [] and list(private_range_from_untrusted_reader.check(plan)) == []
    every_but_one = ", ".join(f'"{item}"' for item in PRIVATE.items()[1:])
    plan = load(write(tmp_path, f'["@metadata", {every_but_one}]'))
    (finding,) = private_range_from_untrusted_reader.check(plan)
    assert finding.items == (PRIVATE.items()[0],) and '"@private"' in finding.message


def test_the_target_enforces_the_expansion(tmp_path: Path) -> None:
    plan = load(write(tmp_path, '["@private"]'))
    rules = squid_rules(egress_plan(plan.servers["crawler"]))
    denied = [line.split()[3] for line in rules if line.startswith("acl spec_denied dst ")]
    for network in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7", "fe80::/10", "127.0.0.0/8"):
        assert network in denied
    # never the IPv4-mapped block (squid would refuse every IPv4 address), never a range inside another one
    assert "::ffff:0:0/96" not in denied and "http_access deny spec_denied" in rules
    listed = [ipaddress.ip_network(word) for word in denied]
    assert not any(a != b and a.version == b.version and a.subnet_of(b) for a in listed for b in listed)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ('"@metdata"', "no destination preset is named '@metdata'; did you mean '@metadata'?"),
        ('"@privat"', "did you mean '@private'?"),
        ('"@private:443"', "a preset covers every port; write '@private'"),
    ],
)
def test_an_unknown_or_misused_preset_is_a_positioned_error(tmp_path: Path, entry: str, words: str) -> None:
    with pytest.raises(SpecError) as caught:
        load(write(tmp_path, f'["1.2.3.4/32", {entry}]'), display_name="spec.yaml")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.format().startswith("spec.yaml:9:28: SC004 servers.crawler.egress.deny[1]:") and words in diagnostic.format()


def test_an_unquoted_preset_gets_a_quoting_hint(tmp_path: Path) -> None:
    result = run_cli("lint", str(write(tmp_path, "[@metadata]")))
    assert result.returncode == 1 and ':9:14: YM001 YAML syntax error: a plain value cannot start with \'@\'; quote it, as in "@metadata"' in result.stdout


def test_the_schema_accepts_presets_and_refuses_unknown_ones() -> None:
    schema = json.loads((REPO / "schemas" / "mcp-sandbox.schema.json").read_text(encoding="utf-8"))
    base = {"version": 1, "project": "demo", "servers": {"a": {"command": ["x"], "egress": {"default": "allow", "deny": []}}}}
    for name in PRESETS:
        base["servers"]["a"]["egress"]["deny"] = [f"@{name}", "10.0.0.0/8"]  # type: ignore[index]
        jsonschema.validate(base, schema)
    base["servers"]["a"]["egress"]["deny"] = ["@metdata"]  # type: ignore[index]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(base, schema)


def test_json_output_lists_what_a_finding_leaves_open(tmp_path: Path) -> None:
    result = run_cli("lint", "--format", "json", "--select", "NW001", str(write(tmp_path, '["@private"]')))
    (finding,) = json.loads(result.stdout)["results"]
    assert not re.search(r"and \d+ more", finding["message"]) and '"@metadata"' in finding["message"]
    assert "168.63.129.16" in finding["items"] and "metadata.google.internal" in finding["items"] and len(finding["items"]) == 12


def test_explain_lists_a_preset_every_preset_and_the_rule_lists_its_own() -> None:
    one = run_cli("explain", "@metadata")
    assert one.returncode == 0 and all(f"`{item}`" in one.stdout for item in METADATA.items())
    every = run_cli("explain", "@")
    assert every.returncode == 0 and all(f"## {preset.ref}" in every.stdout for preset in PRESETS.values())
    rule = run_cli("explain", "NW001")
    assert "## The @metadata preset" in rule.stdout and all(f"`{item}`" in rule.stdout for item in METADATA.items())
    assert "## The @private preset" in run_cli("explain", "NW003").stdout
    typo = run_cli("explain", "@metdata")
    assert typo.returncode == 2 and "did you mean '@metadata'?" in typo.stderr


def test_docs_list_every_preset_in_full() -> None:
    spec_md = (REPO / "docs" / "spec.md").read_text(encoding="utf-8")
    for preset in PRESETS.values():
        assert f"### {preset.ref}" in spec_md and all(f"`{item}`" in spec_md for item in preset.items())


def test_sarif_carries_the_items_too(tmp_path: Path) -> None:
    result = run_cli("lint", "--format", "sarif", "--select", "NW003", str(write(tmp_path, '["@metadata", "@rfc1918"]')))
    (found,) = json.loads(result.stdout)["runs"][0]["results"]
    assert "fc00::/7" in found["properties"]["items"] and "10.0.0.0/8" not in found["properties"]["items"]
