"""The loop every target shares (targets/skeleton.py) and the table of targets.

A target supplies its capability matrix, its data-dependent gaps and its files;
the skeleton decides levels, TG findings and what is written. These tests hold
the skeleton to that with a target written here, and every registered target to
the manifest it writes.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from mcpspec.api import load_text
from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets import REGISTRY, TARGET_NAMES, get_target, skeleton
from mcpspec.targets.base import CONTROLS, BuildOptions, Capability, Emitted, Gap, Overrides, Refused
from mcpspec.targets.build import MANIFEST, build_plan

TODAY = datetime.date(2026, 12, 1)
# Build inputs a target cannot build without (the client target writes one client's config).
# The cedar target's policies go beside a sandbox target's build (alone it enforces no boundary).
NEEDED = {"client": BuildOptions(client="claude-code", spec_path="/srv/mcp/mcp-sandbox.yaml"), "cedar": BuildOptions(sandbox="bwrap")}

VAULT_WAIVED = """\
version: 1
project: acme
secrets:
  deploy: {provider: vault, ref: kv/deploy#token}
servers:
  ops:
    kind: deploy
    trust: vetted
    placement: dedicated
    command: [/usr/bin/true]
    image: localhost/ops@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc  # container targets run an image
    secrets:
      - {use: deploy, as: {file: /run/secrets/deploy}}
waivers:
  - {rule: TG001, at: secrets.deploy.provider, reason: the vault agent writes the file on this host, expires: 2999-01-01}
"""


def _manifest(build_files: dict[str, str]) -> dict[str, object]:
    data = json.loads(build_files[MANIFEST])
    assert isinstance(data, dict)
    return data

# A pod runs an image, and a pod spec cannot limit processes (TG001 at runtime.pids, waived here too).
# A pod spec has no process limit (only the kubelet's podPidsLimit): the k8s spec sets one and waives that gap too.
K8S_WAIVED = VAULT_WAIVED.replace("    secrets:\n", "    runtime: {pids: 64}\n    secrets:\n", 1) + (
    "  - {rule: TG001, at: servers.ops.runtime.pids, reason: the kubelet's podPidsLimit, expires: 2999-01-01}\n")


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_a_waived_gap_still_lowers_the_level_in_the_manifest(target: str) -> None:
    """A waiver accepts a risk; it never makes the manifest claim a control is enforced."""
    build = build_plan(load_text(VAULT_WAIVED if target != "k8s" else K8S_WAIVED, "waived.yaml"), target, today=TODAY, options=NEEDED.get(target))
    tg001 = [r for r in build.results if r.code == "TG001"]
    assert tg001 and all(r.suppression is not None for r in tg001), [r.message for r in build.results]
    assert not build.blocked
    servers = _manifest(build.files)["servers"]
    assert isinstance(servers, dict)
    assert servers["ops"]["built"] is True
    assert servers["ops"]["controls"]["secrets"] == "none"


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_a_refused_value_is_tg004_at_the_value_and_its_server_gets_no_files(target: str) -> None:
    spec = """\
version: 1
project: acme
servers:
  good:
    kind: other
    trust: first-party
    placement: dedicated
    command: [/usr/bin/true]
    image: localhost/ops@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
  bad:
    kind: other
    trust: first-party
    placement: dedicated
    command: "true && true"
    image: localhost/ops@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
"""
    path, position = ("servers", "bad", "command"), (14, 14)
    if target == "k8s":  # a pod runs a shell command as /bin/sh -c; what it refuses is a server without an image
        spec = spec.removesuffix("    image: localhost/ops@sha256:" + "c" * 64 + "\n")
        path, position = ("servers", "bad", "image"), (10, 3)  # no image key: the server it belongs to
    build = build_plan(load_text(spec, "refused.yaml"), target, today=TODAY, options=NEEDED.get(target))
    tg004 = [r for r in build.results if r.code == "TG004"]
    assert len(tg004) == 1 and tg004[0].path == path, [r.message for r in tg004]
    assert (tg004[0].span.line, tg004[0].span.col) == position
    assert build.blocked
    shared = build.files.get("compose.yaml", "")  # one file for every server: its services say who was built
    assert not any("bad" in name for name in build.files) and "\n  bad:" not in shared, sorted(build.files)
    assert any("good" in name for name in build.files) or "\n  good:" in shared or '"good"' in build.files.get(".mcp.json", ""), sorted(build.files)
    client = build.files.get(".mcp.json", "")  # the client target: one config that names every server built
    assert '"bad"' not in client and (target != "client" or '"good"' in client), client
    servers = _manifest(build.files)["servers"]
    assert isinstance(servers, dict)
    assert servers["bad"]["built"] is False and servers["good"]["built"] is True


class _Toy:
    """A target of a few lines: everything partial, a refusal on request, one shared file."""

    name = "toy"
    description = "a target written in the test"
    usage = "Run it."
    options = frozenset({"proxy_image"})
    capabilities: ClassVar[dict[str, Capability]] = {control.id: Capability("partial", "in part") for control in CONTROLS}

    def __init__(self) -> None:
        self.shared_with: list[str] = []

    def server_gaps(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
        own = [Gap("secrets", "none", sandbox.path, "toy keeps no secrets", server=sandbox.name)]
        return own, {"identity": ("none", "toy runs everything as root")}

    def server_files(self, plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> Emitted:
        if sandbox.name == "refused":
            raise Refused("env", (*sandbox.path, "command"), "toy refuses this server")
        return Emitted({f"{sandbox.name}.toy": "x\n", f"{sandbox.name}.sh": "#!/bin/sh\n"}, {f"{sandbox.name}.sh"})

    def project_files(self, plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
        self.shared_with = [s.name for s in built]
        return Emitted({"all.toy": ",".join(self.shared_with) + f" via {options.proxy_image}"})


TOY_SPEC = """\
version: 1
project: acme
servers:
  one: {kind: other, trust: first-party, placement: dedicated, command: [/bin/a]}
  refused: {kind: other, trust: first-party, placement: dedicated, command: [/bin/b]}
  far: {kind: search, trust: third-party, placement: external, transport: {type: http, url: "https://mcp.example.com/"}}
"""


def test_the_skeleton_runs_a_new_target_from_its_matrix_gaps_and_files_alone() -> None:
    toy = _Toy()
    output = skeleton.build(toy, load_text(TOY_SPEC, "toy.yaml"))
    assert output.files == {"one.toy": "x\n", "one.sh": "#!/bin/sh\n", "all.toy": "one via None"}
    assert output.executable == {"one.sh"}
    assert toy.shared_with == ["one"]  # neither the refused server nor the external one
    assert set(output.enforcement) == {"one"}
    levels = output.enforcement["one"]
    assert levels["identity"] == "none" and levels["hidden-paths"] == "partial"
    assert levels["secrets"] == "none"  # a gap of a control the matrix did not list is recorded too
    refused = [g for g in output.gaps if g.unrepresentable]
    assert [(g.server, g.path) for g in refused] == [("refused", ("servers", "refused", "command"))]
    assert {g.server for g in output.gaps if not g.unrepresentable} == {"one", "refused"}


def test_a_level_is_the_weakest_of_the_matrix_and_every_gap() -> None:
    levels: dict[str, skeleton.Level] = {"mounts": "full", "secrets": "partial"}
    skeleton.lower(levels, [Gap("mounts", "partial", (), "a"), Gap("secrets", "none", (), "b"), Gap("mounts", "none", (), "c"), Gap("memory", "partial", (), "d")])
    assert levels == {"mounts": "none", "secrets": "none", "memory": "partial"}


@pytest.mark.parametrize("name", TARGET_NAMES)
def test_every_registered_target_is_complete(name: str) -> None:
    target = get_target(name)
    assert target.name == name
    assert target.description and target.usage.strip()
    assert set(target.capabilities) == {control.id for control in CONTROLS}


def test_the_registry_is_the_one_table_the_commands_read() -> None:
    assert tuple(REGISTRY) == TARGET_NAMES
    with pytest.raises(ValueError, match="unknown target 'nope'; choose from bwrap, systemd"):
        get_target("nope")


def test_a_build_option_reaches_the_target_that_takes_it_and_is_refused_by_one_that_would_ignore_it() -> None:
    plan = load_text(TOY_SPEC, "toy.yaml")
    output = skeleton.build(_Toy(), plan, BuildOptions(proxy_image="localhost/squid@sha256:" + "a" * 64))
    assert output.files["all.toy"] == "one via localhost/squid@sha256:" + "a" * 64
    with pytest.raises(ValueError, match="the toy target takes no --secret-store"):
        skeleton.build(_Toy(), plan, BuildOptions(secret_store="vault"))


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_no_option_looks_applied_to_a_target_that_ignores_it(target: str, tmp_path: Path) -> None:
    from conftest import REPO, run_cli

    for flag, value in (("--proxy-image", "localhost/squid@sha256:" + "a" * 64), ("--egress", "cilium"), ("--secret-store", "vault"), ("--pod-pids-limit", "64")):
        name = flag.removeprefix("--").replace("-", "_")
        if name in get_target(target).options:
            continue
        done = run_cli("build", str(REPO / "examples" / "coding-agent.yaml"), "--target", target, "--out", str(tmp_path / "out"), flag, value)
        assert done.returncode == 2 and f"the {target} target takes no {flag}" in done.stderr, done.stderr
        assert not (tmp_path / "out").exists()
