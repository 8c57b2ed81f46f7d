"""The thin CLI: options from the config and the flags decided in one place (mcpspec.settings),
for every command that reads a spec; one registry of output formats; one build summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from mcpspec import api
from mcpspec.config import ConfigError
from mcpspec.report import renderers
from mcpspec.report.graph import render as render_graph
from mcpspec.report.model import LintReport
from mcpspec.settings import Flags, Settings, settings
from mcpspec.targets.examples import build_report

CODING = REPO / "examples" / "coding-agent.yaml"
DEPLOY = REPO / "examples" / "deploy-tool.yaml"
RISKY = REPO / "examples" / "risky.yaml"
COMMANDS = {
    "lint": ["lint", str(CODING), "--format", "json"],
    "graph": ["graph", str(CODING), "--format", "json"],
    "build": ["build", str(CODING), "--target", "bwrap", "--check"],
}


def _manifest_rules(out: Path) -> set[str]:
    return {f["rule"] for f in json.loads((out / ".mcpspec-build.json").read_text())["findings"]}


def _empty_config(tmp_path: Path) -> Path:
    path = tmp_path / "empty.yaml"
    path.write_text("# no choices\n")
    return path


def test_config_ignore_of_a_target_rule_takes_effect_in_build(tmp_path: Path) -> None:
    # systemd: a target with a partial boundary (TG002) for this spec as well as partial policies (TG003).
    plain = run_cli("build", str(CODING), "--target", "systemd", "--out", str(tmp_path / "plain"), "--config", str(_empty_config(tmp_path)))
    assert plain.returncode == 0, plain.stderr
    assert "TG003" in plain.stderr and _manifest_rules(tmp_path / "plain") == {"TG002", "TG003"}
    # The config beside the spec (found upward from the spec's directory, whatever the working directory).
    (tmp_path / ".mcpspec.yaml").write_text("ignore: [TG003]\n")
    spec = tmp_path / "mcp-sandbox.yaml"
    spec.write_text(CODING.read_text())
    found = run_cli("build", str(spec), "--target", "systemd", "--out", str(tmp_path / "found"), cwd=REPO)
    assert found.returncode == 0, found.stderr
    assert "TG003" not in found.stderr and "TG002" in found.stderr
    assert _manifest_rules(tmp_path / "found") == {"TG002"}
    # --config wins over the config found upward.
    chosen = run_cli("build", str(spec), "--target", "systemd", "--out", str(tmp_path / "chosen"), "--config", str(_empty_config(tmp_path)), cwd=REPO)
    assert chosen.returncode == 0 and _manifest_rules(tmp_path / "chosen") == {"TG002", "TG003"}


def test_config_severity_of_a_target_rule_can_stop_the_build(tmp_path: Path) -> None:
    config = tmp_path / "strict.yaml"
    config.write_text("severity: {TG003: high}\n")
    result = run_cli("build", str(CODING), "--target", "bwrap", "--out", str(tmp_path / "o"), "--config", str(config))
    assert result.returncode == 1 and "TG003 [high]" in result.stderr and "nothing built for bwrap" in result.stderr
    assert not (tmp_path / "o").exists()


def test_only_a_waiver_accepts_an_unenforceable_boundary_never_the_config(tmp_path: Path) -> None:
    config = tmp_path / "lax.yaml"
    config.write_text("ignore: [TG]\nseverity: {TG001: info, TG004: info}\nfail-on: never\n")
    result = run_cli("build", str(DEPLOY), "--target", "bwrap", "--out", str(tmp_path / "o"), "--config", str(config))
    assert result.returncode == 1, result.stderr
    assert "TG001 [high] boundary-not-enforced" in result.stderr and "TG003" not in result.stderr and "TG002" not in result.stderr
    assert not (tmp_path / "o").exists()


def test_config_no_inline_suppressions_reaches_the_build(tmp_path: Path) -> None:
    spec = tmp_path / "ops.yaml"
    spec.write_text(
        "version: 1\nproject: demo\nservers:\n  ops:\n    command: [mcp-ops]\n    mounts:\n"
        "      - {from: ~/.ssh, to: /keys}  # mcpspec: ignore[FS001] reason: deploy keys of this host\n"
        "    tools:\n      run: {effects: [reads_private]}\n"
    )
    quiet = run_cli("build", str(spec), "--target", "bwrap", "--out", str(tmp_path / "a"), "--config", str(_empty_config(tmp_path)))
    assert quiet.returncode == 0, quiet.stderr
    strict = tmp_path / "strict.yaml"
    strict.write_text("no-inline-suppressions: true\n")
    loud = run_cli("build", str(spec), "--target", "bwrap", "--out", str(tmp_path / "b"), "--config", str(strict))
    assert loud.returncode == 1 and "FS001" in loud.stderr and not (tmp_path / "b").exists()


def test_every_spec_command_takes_config(tmp_path: Path) -> None:
    """lint and graph show the findings the config selects; build's own test is the TG003 one above."""
    config = tmp_path / "only-fs005.yaml"
    config.write_text("select: [FS005]\n")
    linted = run_cli("lint", str(RISKY), "--format", "json", "--config", str(config))
    assert {r["code"] for r in json.loads(linted.stdout)["results"]} == {"FS005"}
    every = json.loads(run_cli("graph", str(RISKY), "--format", "json", "--config", str(_empty_config(tmp_path))).stdout)
    drawn = json.loads(run_cli("graph", str(RISKY), "--format", "json", "--config", str(config)).stdout)
    assert len({f["code"] for node in every["nodes"] for f in node["findings"]}) > 10
    assert {f["code"] for node in drawn["nodes"] for f in node["findings"]} == {"FS005"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_broken_or_missing_config_is_a_usage_error_for_every_command(command: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("selcet: [FS001]\n")
    result = run_cli(*COMMANDS[command], "--config", str(broken), cwd=tmp_path)
    assert result.returncode == 2 and "selcet" in result.stderr and str(broken) in result.stderr, result.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("ignore: [NOPE999]\n")
    result = run_cli(*COMMANDS[command], "--config", str(unknown), cwd=tmp_path)
    assert result.returncode == 2 and "no rule is named 'NOPE999'" in result.stderr
    missing = run_cli(*COMMANDS[command], "--config", str(tmp_path / "absent.yaml"), cwd=tmp_path)
    assert missing.returncode == 2 and "cannot read config" in missing.stderr and "Traceback" not in missing.stderr


@pytest.mark.parametrize(("example", "target"), [(RISKY, "bwrap"), (DEPLOY, "bwrap"), (RISKY, "systemd"), (CODING, "bwrap")])
def test_cli_and_committed_examples_print_the_same_build_summary(example: Path, target: str, tmp_path: Path) -> None:
    printed, files, _ = build_report(example, target)
    name = example.relative_to(REPO).as_posix()
    result = run_cli("build", name, "--target", target, "--out", str(tmp_path / "o"), "--config", str(_empty_config(tmp_path)))
    if files:
        assert result.returncode == 0
        summary, _, last = printed.rstrip("\n").rpartition("\n")
        assert result.stderr.startswith(summary + "\n" + last + " in "), result.stderr
    else:
        assert result.returncode == 1 and result.stderr == printed
        assert printed.endswith(f"mcpspec: nothing built for {target}: the findings above stop the build\n")


def test_each_format_is_found_by_name_in_one_registry() -> None:
    assert list(renderers.LINT_FORMATS) == ["text", "json", "sarif", "github", "junit"]
    assert list(renderers.GRAPH_FORMATS) == ["dot", "mermaid", "json", "svg"]
    report = api.lint_files([RISKY]).report
    assert json.loads(renderers.lint_renderer("json")(report, False))["results"]
    assert "\x1b[" not in renderers.lint_renderer("text")(report, False)
    assert "\x1b[" in renderers.lint_renderer("text")(report, True)
    assert renderers.lint_renderer("junit")(report, False).startswith("<?xml")
    shown, _ = api.graph_file(CODING)
    assert shown is not None
    assert renderers.graph_renderer("dot")(shown).startswith('digraph "mcpspec" {')
    assert renderers.graph_renderer("mermaid")(shown).startswith("flowchart LR")
    assert render_graph(shown, "json") == renderers.graph_renderer("json")(shown)


def test_unknown_formats_are_usage_errors_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(renderers.UnknownFormat, match="unknown format 'xml'; choose from text, json, sarif, github, junit"):
        renderers.lint_renderer("xml")
    with pytest.raises(ValueError, match="unknown format 'png'; choose from dot, mermaid, json, svg"):
        renderers.graph_renderer("png")
    linted = run_cli("lint", str(CODING), "--format", "xml")
    assert linted.returncode == 2 and "unknown format 'xml'; choose from text, json, sarif, github, junit" in linted.stderr
    drawn = run_cli("graph", str(CODING), "--format", "png", "--output", str(tmp_path / "g.png"))
    assert drawn.returncode == 2 and "unknown format 'png'; choose from dot, mermaid, json, svg" in drawn.stderr
    assert not (tmp_path / "g.png").exists()
    help_text = " ".join((run_cli("lint", "--help").stdout + run_cli("graph", "--help").stdout).split())
    assert "text, json, sarif, github, junit" in help_text and "dot, mermaid, json, svg" in help_text


def test_settings_put_the_flags_over_the_config(tmp_path: Path) -> None:
    config = tmp_path / ".mcpspec.yaml"
    config.write_text("select: [FS]\nignore: [FS001]\nfail-on: high\nseverity: {FS004: critical}\nper-file-ignores: {'ops*.yaml': [FS002]}\n")
    nested = tmp_path / "nested"
    nested.mkdir()
    found = settings(start=nested)
    assert found.config.path == config and found.fail_on == "high"
    options = found.lint_options("ops.yaml")
    assert options.enabled("FS004") and not options.enabled("FS001") and not options.enabled("FS002") and not options.enabled("GR001")
    assert found.lint_options("other.yaml").enabled("FS002") and options.severity["FS004"] == "critical"
    chosen = settings(Flags(select=["GR001,FS001"], ignore=["FS004"], fail_on="never", no_inline_suppressions=True), start=tmp_path)
    flagged = chosen.lint_options("ops.yaml")
    assert flagged.enabled("GR001") and not flagged.enabled("FS001") and not flagged.inline_suppressions and chosen.fail_on == "never"
    assert Settings().fail_on == "low" and Settings().lint_options("x.yaml").select is None
    with pytest.raises(ConfigError, match="--fail-on must be one of"):
        settings(Flags(fail_on="sometimes"), start=tmp_path)
    with pytest.raises(ConfigError, match="no rule is named 'XX9'"):
        settings(Flags(select=["XX9"]), start=tmp_path)
    config.write_text("per-file-ignores: {'*.yaml': [NOPE1]}\n")
    with pytest.raises(ConfigError, match="per-file-ignores"):
        settings(start=tmp_path)


def test_the_api_reads_no_config_unless_given_settings(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(CODING.read_text())
    (tmp_path / ".mcpspec.yaml").write_text("ignore: [TG003]\n")
    default = api.build_file(spec, "bwrap")
    configured = api.build_file(spec, "bwrap", settings(start=tmp_path))
    assert default.build is not None and configured.build is not None
    assert "TG003" in {r.code for r in default.build.results} and "TG003" not in {r.code for r in configured.build.results}
    run = api.lint_files([spec], settings(Flags(select=["FS005"]), start=tmp_path))
    assert {r.code for r in run.report.active} <= {"FS005"} and isinstance(run.report, LintReport)
    with pytest.raises(ConfigError, match="unknown target 'docker'"):
        api.build_file(spec, "docker")
    with pytest.raises(ConfigError, match="--fail-on must be one of"):
        api.build_file(spec, "bwrap", fail_on="critical")
