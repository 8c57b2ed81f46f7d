"""`mcpspec plan`: the resolved Plan with each value's origin, through the real CLI;
and golden files that pin the Plan of every example.

Regenerate the golden files with `make plan-golden` (or MCPSPEC_UPDATE_GOLDEN=1, or
pytest's --update-goldens) after a change that is meant to alter a Plan, and read the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLES, REPO, run_cli
from mcpspec import api
from mcpspec.report.plan_output import render_json

GOLDEN = REPO / "tests" / "golden" / "plan"

SPEC = """\
version: 1
project: origins
defaults:
  egress: {default: deny, allow: ["docs.example.com:443"]}
  runtime: {memory: 256Mi}
  logging: {sink: /var/log/mcp/audit.jsonl}
workspace:
  root: /srv/ws
  dirs:
    scratch: {mode: rw, tmpfs: true}
    out: {mode: rw}
secrets:
  token: {provider: env, ref: API_TOKEN_RO, ttl: 1h}
servers:
  fetch:
    command: [mcp-fetch]
    runtime: {user: 1000}
    egress: {via: proxy}
    mounts:
      - {from: workspace.scratch, to: /tmp/s}
      - {from: workspace.out, to: /out, mode: ro}
      - {from: "~/notes", to: /notes}
    secrets:
      - {use: token, as: {env: TOKEN}}
"""


def _golden_text(example: Path) -> str:
    data, errors = api.plan_file(example, f"examples/{example.name}")
    assert data is not None, [r.message for r in errors.results]
    return render_json(data)


def _updating(request: pytest.FixtureRequest) -> bool:
    return os.environ.get("MCPSPEC_UPDATE_GOLDEN") == "1" or bool(request.config.getoption("--update-goldens"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_the_plan_of_every_example_matches_its_golden_file(example: Path, request: pytest.FixtureRequest) -> None:
    golden = GOLDEN / f"{example.stem}.json"
    text = _golden_text(example)
    if _updating(request):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{example.name} has no golden plan: run `make plan-golden` and commit {golden.relative_to(REPO)}"
    assert golden.read_text(encoding="utf-8") == text, f"the plan of {example.name} changed: run `make plan-golden` and review the diff"


def test_every_golden_file_has_its_example() -> None:
    stems = {example.stem for example in EXAMPLES}
    orphans = sorted(path.name for path in GOLDEN.glob("*") if path.stem not in stems or path.suffix != ".json")
    assert not orphans, f"golden plans without an example under examples/: {orphans}"


def _plan(tmp_path: Path, *args: str, text: str = SPEC) -> tuple[int, str, str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    done = run_cli("plan", "spec.yaml", *args, cwd=tmp_path)
    return done.returncode, done.stdout, done.stderr


def test_plan_prints_json_with_the_origin_of_every_value(tmp_path: Path) -> None:
    status, out, err = _plan(tmp_path)
    assert status == 0, err
    fetch = json.loads(out)["servers"]["fetch"]
    # Set on the server, in defaults, or by nobody (built in).
    assert fetch["identity"]["uid"] == {"value": 1000, "from": "servers.fetch.runtime.user"}
    assert fetch["identity"]["gid"] == {"value": 1000, "from": "servers.fetch.runtime.user"}  # the gid follows the uid
    assert fetch["resources"]["memory"] == {"value": 256 * 1024**2, "from": "defaults.runtime.memory"}
    assert fetch["resources"]["pids"] == {"value": 128, "from": "default"}
    assert fetch["egress"]["via"] == {"value": "proxy", "from": "servers.fetch.egress.via"}
    assert fetch["egress"]["allow"] == {"value": ["docs.example.com:443"], "from": "defaults.egress.allow"}
    assert fetch["egress"]["deny"] == {"value": [], "from": "default"}
    assert fetch["logging"]["sink"] == {"value": {"kind": "file", "path": "/var/log/mcp/audit.jsonl"}, "from": "defaults.logging.sink"}
    assert fetch["lifecycle"]["max_lifetime"] == {"value": None, "from": "default"}
    assert fetch["placement"] == {"value": "dedicated", "from": "default"}
    scratch, out_dir, notes = fetch["mounts"]
    assert scratch["kind"] == {"value": "tmpfs", "from": "servers.fetch.mounts[0].from"}
    assert scratch["mode"] == {"value": "rw", "from": "workspace.dirs.scratch.mode"}
    assert scratch["size"] == {"value": 256 * 1024**2, "from": "default"}
    assert out_dir["mode"] == {"value": "ro", "from": "servers.fetch.mounts[1].mode"}
    assert (notes["kind"]["value"], notes["source"]["value"], notes["mode"]) == ("home", "notes", {"value": "ro", "from": "default"})


def test_plan_shows_a_secret_by_reference_never_by_value(tmp_path: Path) -> None:
    status, out, err = _plan(tmp_path, "--format", "json")
    assert status == 0, err
    (secret,) = json.loads(out)["servers"]["fetch"]["secrets"]
    assert secret["provider"] == {"value": "env", "from": "secrets.token.provider"}
    assert secret["ref"] == {"value": "API_TOKEN_RO", "from": "secrets.token.ref"}
    assert secret["env"] == {"value": "TOKEN", "from": "servers.fetch.secrets[0].as.env"}
    assert secret["ttl"] == {"value": 3600, "from": "secrets.token.ttl"}
    # The value is read at launch only: the plan never reads the environment.
    done = run_cli("plan", "spec.yaml", cwd=tmp_path)
    assert done.stdout == out


def test_plan_yaml_is_the_same_data_as_json(tmp_path: Path) -> None:
    status, as_yaml, err = _plan(tmp_path, "-f", "yaml")
    assert status == 0, err
    _, as_json, _ = _plan(tmp_path)
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_plan_of_a_broken_spec_prints_positioned_errors_and_exits_1(tmp_path: Path) -> None:
    status, out, err = _plan(tmp_path, text=SPEC.replace("use: token", "use: tokn"))
    assert status == 1 and out == ""
    assert "spec.yaml:24:15: SC005 server 'fetch' uses secret 'tokn'" in err


def test_plan_usage_errors_exit_2(tmp_path: Path) -> None:
    assert _plan(tmp_path, "-f", "toml")[0] == 2
    assert run_cli("plan", "missing.yaml", cwd=tmp_path).returncode == 2


def test_plan_output_file_is_replaced_in_one_step(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old\n", encoding="utf-8")
    before = target.stat().st_ino
    status, out, err = _plan(tmp_path, "-o", "plan.json")
    assert status == 0 and out == "", err
    assert target.stat().st_ino != before  # a new file renamed over the old one, not the old one rewritten
    assert json.loads(target.read_text(encoding="utf-8"))["servers"]["fetch"]["identity"]["uid"]["value"] == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "spec.yaml"]  # no temporary file left
    # A file that cannot be written leaves nothing behind and exits 2.
    status, _, err = _plan(tmp_path, "-o", "no-such-dir/plan.json")
    assert status == 2 and "cannot write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "spec.yaml"]
