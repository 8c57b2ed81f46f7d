"""The k8s target's syscall filter (issue 25 item 2): with --seccomp-localhost every server
container names its Localhost profile and the build writes the profile; the generated pod runs
under `podman kube play` with that profile and the syscall probe as the server; without the
option the row's account of RuntimeDefault is checked against podman's default profile."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import require_tool
from k8s_restricted import violations
from mcpspec.api import load_text
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import build_plan
from mcpspec.targets.k8s.manifest import load as load_yaml
from mcpspec.targets.k8s.seccomp import container_policy
from mcpspec.targets.seccomp import oci_profile
from podman_images import Recipe, pinned, podman_env

sys.path.insert(0, str(Path(__file__).parent / "probe"))
from syscall_expect import SYSCALL_PROBE, mismatches

IMAGE = Recipe("mcpspec-k8s-test", ("python3",))  # the image tests/test_target_k8s_real.py uses
PROFILES = "mcpspec/kube"
PROXY_IMAGE = "localhost/mcpspec-egress@sha256:" + "0" * 64
LOCALHOST = BuildOptions(seccomp_localhost=PROFILES, proxy_image=PROXY_IMAGE)
DEFAULT = BuildOptions(proxy_image=PROXY_IMAGE)
SPEC = """\
version: 1
project: kube
agents:
  coder: {{servers: [side]}}
servers:
  probe:
    image: {image}
    command: {command}
    lifecycle: {{mode: per-task, max_lifetime: 2m}}
    runtime: {{user: 1234, pids: null}}
  web:
    image: localhost/web@sha256:{ones}
    transport: {{type: http, port: 8300}}
    command: [/usr/bin/web]
    runtime: {{pids: null}}
    egress: {{allow: ["10.1.2.0/24:5432"]}}
  side:
    placement: agent
    image: localhost/side@sha256:{ones}
    command: [side]
    runtime: {{pids: null}}
"""


def _spec(image: str = "localhost/probe@sha256:" + "2" * 64) -> str:
    command = json.dumps(["/usr/bin/python3", "-c", SYSCALL_PROBE.read_text(encoding="utf-8")])
    return SPEC.format(image=image, command=command, ones="1" * 64)


def _containers(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    found = {}
    for name, text in files.items():
        if name.endswith(".yaml"):
            for doc in load_yaml(text):
                spec = doc["spec"]["template"]["spec"] if doc["kind"] in ("Deployment", "Job") else doc["template"]["spec"] if doc["kind"] == "PodTemplate" else None
                for container in (spec or {}).get("containers", []):
                    found[container["name"]] = container
    return found


def test_manifests_with_localhost_profiles_are_valid_and_restricted() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    plan = load_text(_spec(), "kube.yaml")
    build = build_plan(plan, "k8s", options=LOCALHOST, fail_on="critical")
    assert not build.blocked, [r.message for r in build.results]
    containers = _containers(build.files)
    for server in ("probe", "web", "side"):
        profile = containers[server]["securityContext"]["seccompProfile"]
        assert profile == {"type": "Localhost", "localhostProfile": f"{PROFILES}/{server}.json"}
        assert json.loads(build.files[f"seccomp/{server}.json"]) == oci_profile(container_policy(plan.servers[server]))
    assert containers["squid"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}  # the proxy is not the server's
    version = kubernetes_validate.utils.latest_version()
    for name, text in build.files.items():
        if name.endswith(".yaml") and name != "kustomization.yaml":
            for doc in load_yaml(text):
                if doc["apiVersion"].startswith(("v1", "apps/", "batch/", "networking.k8s.io/")):
                    kubernetes_validate.validate(doc, version, strict=True)
                    pod = doc["spec"]["template"]["spec"] if doc["kind"] in ("Deployment", "Job") else doc["template"]["spec"] if doc["kind"] == "PodTemplate" else None
                    if pod is not None:
                        assert violations(pod) == [], name
    without = build_plan(plan, "k8s", options=DEFAULT, fail_on="critical")
    assert not any(name.startswith("seccomp/") for name in without.files)
    assert all(c["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"} for c in _containers(without.files).values())
    assert any("syscall filter" in r.message and "RuntimeDefault" in r.message for r in without.results), "the gap is reported (TG002)"


@pytest.mark.parametrize("value", ["/abs", "../up", "a/../b", "a/./b", "a//b", "sp ace", "x\ny", ".hidden", "a/"])
def test_a_profile_directory_that_is_not_a_plain_relative_path_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="--seccomp-localhost"):
        BuildOptions(seccomp_localhost=value)


def _play(pod: dict[str, Any], root: Path) -> dict[str, str]:
    """Run the pod with `podman kube play --network none`, profiles under ``root``; the probe's JSON answer."""
    podman = require_tool("podman")
    name = pod["metadata"]["name"]
    manifest = root.parent / f"{name}.yaml"
    manifest.write_text(yaml.safe_dump(pod, sort_keys=False), encoding="utf-8")
    try:
        played = subprocess.run([podman, "kube", "play", "--network", "none", "--seccomp-profile-root", str(root), str(manifest)], capture_output=True, text=True, timeout=120, env=podman_env(), check=False)
        assert played.returncode == 0, played.stderr
        subprocess.run([podman, "wait", f"{name}-probe"], capture_output=True, timeout=120, env=podman_env(), check=False)
        logs = subprocess.run([podman, "logs", f"{name}-probe"], capture_output=True, text=True, timeout=60, env=podman_env(), check=False)
        line = next((line for line in reversed(logs.stdout.splitlines()) if line.startswith("{")), None)
        assert line is not None, logs.stdout + logs.stderr
        return dict(json.loads(line))
    finally:
        subprocess.run([podman, "kube", "down", str(manifest)], capture_output=True, timeout=120, env=podman_env(), check=False)


def _probe_pod(files: dict[str, str]) -> dict[str, Any]:
    """The probe's Job template as a Pod; the probe runs as the bridge's child would (the command
    after its ``--``): the test image holds no bridge, and the pod has no network to listen on."""
    job = next(d for d in load_yaml(files["probe.yaml"]) if d["kind"] == "Job")
    template = job["spec"]["template"]
    container = template["spec"]["containers"][0]
    assert container["command"][0] == "mcp-proxy"
    container.pop("ports")
    container["command"] = container["command"][container["command"].index("--") + 1 :]
    container["command"] = container["command"][container["command"].index("/usr/bin/python3") :]  # without timeout(1)'s wrapper, if any
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"mcpspec-sc-{uuid.uuid4().hex[:10]}", **template["metadata"]}, "spec": template["spec"]}


@pytest.fixture(scope="module")
def image() -> str:
    require_tool("podman")
    require_tool("runc")
    require_tool("catatonit")
    return pinned(IMAGE)


def test_the_localhost_profile_holds_in_the_generated_pod(image: str, tmp_path: Path) -> None:
    plan = load_text(_spec(image), "kube.yaml")
    build = build_plan(plan, "k8s", options=LOCALHOST, fail_on="critical")
    assert not build.blocked, [r.message for r in build.results]
    pod = _probe_pod(build.files)
    profile = pod["spec"]["containers"][0]["securityContext"]["seccompProfile"]
    assert profile == {"type": "Localhost", "localhostProfile": f"{PROFILES}/probe.json"}
    # podman 4.3 reads a Localhost profile only from the annotation, as one file name under its root.
    root = tmp_path / "seccomp-root"
    root.mkdir()
    (root / "probe.json").write_text(build.files["seccomp/probe.json"], encoding="utf-8")
    pod["metadata"].setdefault("annotations", {})["container.seccomp.security.alpha.kubernetes.io/probe"] = "localhost/probe.json"
    found = _play(pod, root)
    families = container_policy(plan.servers["probe"]).socket_families
    assert mismatches(json.dumps(found), families) == {}


def test_runtime_default_leaves_open_what_the_row_says(image: str, tmp_path: Path) -> None:
    """The matrix's account of RuntimeDefault, checked against podman's default profile."""
    plan = load_text(_spec(image), "kube.yaml")
    build = build_plan(plan, "k8s", options=DEFAULT, fail_on="critical")
    pod = _probe_pod(build.files)
    assert pod["spec"]["containers"][0]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    root = tmp_path / "unused"
    root.mkdir()
    found = _play(pod, root)
    for probe in ("keyctl_session_keyring_id", "keyctl_read_session_keyring", "socket_vsock", "socket_netlink", "ptrace_attach_child", "process_vm_readv_child"):
        assert found[probe] == "ok", (probe, found[probe])
