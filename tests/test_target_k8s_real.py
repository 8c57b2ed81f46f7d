"""The k8s target's pod templates, run for real with `podman kube play`, and probed from inside.

The image is a Debian rootfs with python3 built by mmdebstrap and imported once (kept in
podman's store under a tag derived from what it holds). The pod runs with `--network none`.
podman applies the pod's securityContext, volumes and environment as the kubelet does; it
does not apply NetworkPolicy, Jobs' deadlines or external-secrets, which these tests do not claim.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import require_tool
from mcpspec.api import load_text
from mcpspec.targets.build import build_plan
from mcpspec.targets.k8s.manifest import load as load_yaml
from podman_images import Recipe, pinned, podman_env

IMAGE = Recipe("mcpspec-k8s-test", ("python3",))
PROBE = (Path(__file__).parent / "k8s_probe.py").read_text(encoding="utf-8")
HOST_MARKER = str(Path(__file__).resolve())  # a file of the host: the pod must not see it
UID = 1234
WRITES = ["/probe-root", "/in/x", "/out/x", "/scratch/x", "/tmp/x", "/etc/x"]


def _spec(image: str) -> str:
    command = json.dumps(["/usr/bin/python3", "-c", PROBE, *WRITES])
    return f"""\
version: 1
project: kubereal
workspace:
  root: /srv/ws
  dirs:
    input: {{mode: ro}}
    output: {{mode: rw}}
    scratch: {{mode: rw, tmpfs: true, size: 16Mi}}
servers:
  probe:
    image: {image}
    command: {command}
    lifecycle: {{mode: per-task, max_lifetime: 2m}}
    runtime: {{user: {UID}, memory: 256Mi, pids: 64}}
    env: {{set: {{GREETING: "hello world", HOST_MARKER: "{HOST_MARKER}"}}}}
    mounts:
      - {{from: workspace.input, to: /in}}
      - {{from: workspace.output, to: /out}}
      - {{from: workspace.scratch, to: /scratch}}
waivers:
  - {{rule: TG001, at: servers.probe.runtime.pids, reason: "podman kube play: the node bounds processes", expires: "2099-01-01"}}
"""


def pod_manifest(files: dict[str, str], name: str) -> str:
    """The server's Job template as a Pod, with the claims it mounts, for `podman kube play`.

    One change: the test image does not hold the stdio-to-HTTP bridge, so the probe runs as the
    bridge's child would (the command after its ``--``), without the bridge's port (`--network none`)."""
    job = next(d for d in load_yaml(files["probe.yaml"]) if d["kind"] == "Job")
    template = job["spec"]["template"]
    container = template["spec"]["containers"][0]
    assert container["command"][0] == "mcp-proxy" and container.pop("ports")
    container["command"] = container["command"][container["command"].index("--") + 1 :]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **template["metadata"]}, "spec": template["spec"]}
    return yaml.safe_dump_all([*load_yaml(files["workspace.yaml"]), pod], sort_keys=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    podman = require_tool("podman")
    require_tool("runc")
    require_tool("catatonit")
    image = pinned(IMAGE)
    build = build_plan(load_text(_spec(image), "kubereal.yaml"), "k8s")
    assert not build.blocked, [r.message for r in build.results]
    name = f"mcpspec-k8s-{uuid.uuid4().hex[:10]}"
    manifest = tmp_path_factory.mktemp("kube") / "pod.yaml"
    manifest.write_text(pod_manifest(build.files, name), encoding="utf-8")
    try:
        played = subprocess.run([podman, "kube", "play", "--network", "none", str(manifest)], capture_output=True, text=True, timeout=120, env=podman_env(), check=False)
        assert played.returncode == 0, played.stderr
        subprocess.run([podman, "wait", f"{name}-probe"], capture_output=True, text=True, timeout=120, env=podman_env(), check=False)
        logs = subprocess.run([podman, "logs", f"{name}-probe"], capture_output=True, text=True, timeout=60, env=podman_env(), check=False)
        line = next((line for line in logs.stdout.splitlines() if line.startswith("PROBE ")), None)
        assert line is not None, logs.stdout + logs.stderr
        yield json.loads(line.removeprefix("PROBE "))
    finally:
        subprocess.run([podman, "kube", "down", str(manifest)], capture_output=True, timeout=120, env=podman_env(), check=False)
        for claim in ("ws-input", "ws-output"):
            subprocess.run([podman, "volume", "rm", "-f", claim], capture_output=True, timeout=60, env=podman_env(), check=False)


def test_the_pod_runs_non_root_without_capabilities_on_a_read_only_root(report: dict[str, Any]) -> None:
    assert (report["uid"], report["euid"], report["gid"]) == (UID, UID, UID)
    assert all(int(value, 16) == 0 for value in report["cap"].values()), report["cap"]
    assert report["no_new_privs"] == "1" and report["seccomp"] == "2"
    assert report["writes"]["/probe-root"] == os.strerror(30)  # EROFS
    assert report["writes"]["/etc/x"] == os.strerror(30)


def test_mounts_are_as_declared(report: dict[str, Any]) -> None:
    writes = report["writes"]
    assert writes["/in/x"] == os.strerror(30), writes  # ro claim
    assert writes["/out/x"] == "ok" and writes["/scratch/x"] == "ok" and writes["/tmp/x"] == "ok", writes
    mounts = {m["target"]: m for m in report["mounts"]}
    assert "ro" in mounts["/in"]["options"].split(",") and "ro" not in mounts["/out"]["options"].split(",")
    assert mounts["/"]["options"].split(",")[0] == "ro"
    # podman backs a memory emptyDir with disk and ignores sizeLimit: the kubelet's tmpfs and its size are not checked here.
    assert "/scratch" in mounts


def test_nothing_of_the_host_is_visible(report: dict[str, Any]) -> None:
    assert report["exists"] == {"/var/run/secrets/kubernetes.io/serviceaccount": False, HOST_MARKER: False}
    # podman also binds /etc/passwd and /etc/group with an entry for the pod's uid; the kubelet does not.
    fixed = ("/", "/proc", "/sys", "/dev", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/etc/passwd", "/etc/group", "/run/.containerenv",
             "/tmp", "/in", "/out", "/scratch")
    unexpected = [m["target"] for m in report["mounts"] if not any(m["target"] == f or (f in ("/proc", "/sys", "/dev") and m["target"].startswith(f + "/")) for f in fixed)]
    assert unexpected == [], unexpected


def test_only_the_declared_environment_is_set(report: dict[str, Any]) -> None:
    env = report["env"]
    assert env["GREETING"] == "hello world"
    # What the runtime adds (the kubelet adds HOSTNAME and KUBERNETES_SERVICE_* the same way).
    # LC_CTYPE is python's own C-locale coercion (PEP 538), set inside the probe.
    runtime = {"PATH", "HOSTNAME", "HOME", "TERM", "container", "LC_CTYPE"}
    assert set(env) - runtime == {"GREETING", "HOST_MARKER"}, sorted(env)
