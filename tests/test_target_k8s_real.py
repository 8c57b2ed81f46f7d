"""The k8s target's pod templates, run for real with `podman kube play`, and probed from inside.

The images are Debian rootfs with python3 built by mmdebstrap and imported once (tests/podman_images.py);
the bridge's image also holds the pinned mcp-proxy, pip-installed into its python3. Pods run with
`--network none`: the test reaches the bridge through a forwarder from 127.0.0.1 into the pod's namespace.
podman applies the pod's securityContext, volumes and environment as the kubelet does; it
does not apply NetworkPolicy, Jobs' deadlines or external-secrets, which these tests do not claim.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import require_tool
from mcpspec.api import load_text
from mcpspec.targets.base import BuildOptions
from mcpspec.targets.build import build_plan
from mcpspec.targets.k8s.manifest import load as load_yaml
from mcpspec.targets.k8s.pod import BRIDGE
from podman_images import Recipe, pinned, podman_env

IMAGE = Recipe("mcpspec-k8s-test", ("python3",))
# The image of a stdio server behind the bridge: the pinned mcp-proxy, pip-installed into its python3.
# Like any image built from a Dockerfile it sets PATH: the pod names mcp-proxy and timeout by name.
BRIDGE_IMAGE = Recipe("mcpspec-k8s-bridge-test", ("python3",), pip=(f"{BRIDGE[0]}=={BRIDGE[1]}",),
                      env=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",))
BRIDGE_SERVER = (Path(__file__).parent / "k8s_bridge_server.py").read_text(encoding="utf-8")
# The nodes' podPidsLimit as an operator states it, so the spec's pids 64 builds (TG002); podman runs the
# pods under its own pids limit, which these tests do not check.
NODES = BuildOptions(pod_pids_limit=64)
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
    build = build_plan(load_text(_spec(image), "kubereal.yaml"), "k8s", options=NODES)
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


def _bridge_spec(image: str, server: str) -> str:
    command = json.dumps(["/usr/bin/python3", "-c", BRIDGE_SERVER])
    return f"""\
version: 1
project: bridgereal
servers:
  {server}:
    image: {image}
    placement: dedicated
    transport: {{type: stdio}}
    command: {command}
    lifecycle: {{mode: per-session, max_lifetime: 10m}}
    runtime: {{user: {UID}, memory: 256Mi, pids: 64}}
    env: {{set: {{GREETING: "through the bridge"}}}}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _call_through_bridge(url: str, deadline: float) -> tuple[str, dict[str, Any]]:
    """Initialize a session at ``url`` with the SDK's streamable HTTP client (retrying while the bridge
    starts), then call the server's two tools."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def session() -> tuple[str, dict[str, Any]]:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            echoed = await client.call_tool("echo", {"text": "hello"})
            inspected = await client.call_tool("inspect_pod", {})
            return echoed.content[0].text, json.loads(inspected.content[0].text)  # type: ignore[union-attr]

    while True:
        try:
            return asyncio.run(asyncio.wait_for(session(), 30))
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


@pytest.fixture(scope="module")
def bridged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], dict[str, Any], tuple[str, dict[str, Any]]]]:
    """A dedicated stdio server's Deployment, as generated, run by `podman kube play --network none`; its
    bridge port is forwarded from 127.0.0.1 on this machine into the pod's own network namespace by the test.
    Yields (the Deployment, its Service, what the two tool calls returned)."""
    podman = require_tool("podman")
    require_tool("runc")
    require_tool("catatonit")
    socat, nsenter = require_tool("socat"), require_tool("nsenter")
    if f"{sys.version_info.major}.{sys.version_info.minor}" != "3.11":
        pytest.skip("the bridge's compiled dependencies are installed by this python's pip for the image's python3 (3.11)")
    image = pinned(BRIDGE_IMAGE)
    server = f"br{uuid.uuid4().hex[:8]}"
    build = build_plan(load_text(_bridge_spec(image, server), "bridgereal.yaml"), "k8s", options=NODES)
    assert not build.blocked, [r.message for r in build.results]
    docs = load_yaml(build.files[f"{server}.yaml"])
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    service = next(d for d in docs if d["kind"] == "Service")
    manifest = tmp_path_factory.mktemp("bridge") / "deployment.yaml"
    # The Deployment as generated, less one field: podman 4.3 publishes every containerPort on the same port of
    # the host (podman 5 only with --publish-all), which `--network none` refuses. In Kubernetes containerPort only
    # names the port; the bridge listens where its command says, and the test publishes that on 127.0.0.1 itself.
    played_copy = json.loads(json.dumps(deployment))
    assert played_copy["spec"]["template"]["spec"]["containers"][0].pop("ports")
    manifest.write_text(yaml.safe_dump(played_copy, sort_keys=False), encoding="utf-8")
    forwarder = None
    try:
        played = subprocess.run([podman, "kube", "play", "--network", "none", str(manifest)], capture_output=True, text=True, timeout=120, env=podman_env(), check=False)
        assert played.returncode == 0, played.stderr
        lines = played.stdout.split()
        container = lines[lines.index("Container:") + 1]
        pid = subprocess.run([podman, "inspect", "--format", "{{.State.Pid}}", container], capture_output=True, text=True, timeout=60, env=podman_env(), check=True).stdout.strip()
        assert pid.isdigit() and pid != "0", f"the server's container is not running: {pid}"
        port = _free_port()
        target = deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
        forwarder = subprocess.Popen([socat, f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
                                      f"EXEC:{nsenter} -t {pid} -n {socat} STDIO TCP4\\:127.0.0.1\\:{target}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            calls = _call_through_bridge(f"http://127.0.0.1:{port}/mcp", time.monotonic() + 60)
        except Exception as exc:
            logs = subprocess.run([podman, "logs", container], capture_output=True, text=True, timeout=60, env=podman_env(), check=False)
            raise AssertionError(f"no MCP session through the bridge; the pod said:\n{(logs.stdout + logs.stderr)[-3000:]}") from exc
        yield deployment, service, calls
    finally:
        if forwarder is not None:
            forwarder.kill()
            forwarder.wait(timeout=10)
        subprocess.run([podman, "kube", "down", str(manifest)], capture_output=True, timeout=120, env=podman_env(), check=False)


def test_a_dedicated_stdio_server_answers_through_the_pinned_bridge(bridged: tuple[dict[str, Any], dict[str, Any], tuple[str, dict[str, Any]]]) -> None:
    deployment, service, (echoed, seen) = bridged
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    port = container["ports"][0]["containerPort"]
    # The Service and both probes point at the port the bridge listens on.
    assert service["spec"]["ports"][0]["targetPort"] == port
    assert container["readinessProbe"]["tcpSocket"]["port"] == container["livenessProbe"]["tcpSocket"]["port"] == port
    assert echoed == "hello"
    # The tool ran in the server the bridge started as its child, under timeout(1) for max_lifetime, in the restricted pod.
    assert seen["parent"][1:] == ["/usr/local/bin/mcp-proxy", "--host", "0.0.0.0", "--port", str(port), "--pass-environment", "--", "/usr/bin/python3", "-c", BRIDGE_SERVER]
    assert seen["pid1"][:4] == ["timeout", "--signal=TERM", "--kill-after=5s", "600s"]
    assert (seen["uid"], seen["gid"], int(seen["cap_eff"], 16), seen["no_new_privs"]) == (UID, UID, 0, "1")
    assert seen["root_write"] == os.strerror(30)  # EROFS
    assert seen["greeting"] == "through the bridge"  # --pass-environment hands the container's env to the server
