"""One server's container and the pod around it: identity, limits, volumes and secrets.

Every pod and container carries the Pod Security ``restricted`` settings: a fixed
non-zero uid (the spec's, or 65532 for 0), runAsNonRoot, a read-only root file
system, no privilege escalation, every capability dropped and a seccomp profile: the
runtime's default, or the project's own (``seccomp``) where the build is told where nodes hold it. The service-account token is never mounted and service
links are off, so nothing of the cluster reaches the server unasked.
"""

from __future__ import annotations

import json
import math
import posixpath
from dataclasses import dataclass, field
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.base import Refused
from mcpspec.targets.k8s.names import PROXY_PORT, SECRET_NAMES, claim_name, egress_name, kubelet_text
from mcpspec.targets.k8s.secrets import SecretSource

FALLBACK_ID = 65532
SCRATCH = "/tmp"
SCRATCH_SIZE = "64Mi"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
# The stdio-to-HTTP bridge a dedicated stdio server runs behind (PyPI mcp-proxy), as the image must hold it.
BRIDGE = ("mcp-proxy", "0.13.0")
# coreutils' timeout: SIGTERM at max_lifetime to the command and everything it started, SIGKILL 5 s later.
TIMEOUT = ("timeout", "--signal=TERM", "--kill-after=5s")


def command_deadline(sandbox: EffectiveSandbox) -> int | None:
    """max_lifetime in whole seconds where the container's command enforces it (under ``TIMEOUT``):
    every server with one but a dedicated per-task server, which is a Job with activeDeadlineSeconds."""
    lifetime = sandbox.lifecycle.max_lifetime
    if lifetime is None or (sandbox.placement != "agent" and sandbox.lifecycle.mode == "per-task"):
        return None
    return max(1, math.ceil(lifetime))


def uid_of(value: int) -> int:
    return value or FALLBACK_ID


def pod_security(sandbox: EffectiveSandbox) -> dict[str, Any]:
    uid, gid = uid_of(sandbox.identity.uid), uid_of(sandbox.identity.gid)
    return {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": gid, "fsGroup": gid, "seccompProfile": {"type": "RuntimeDefault"}}


def container_security(sandbox: EffectiveSandbox, seccomp: dict[str, str] | None = None) -> dict[str, Any]:
    """The container's securityContext; ``seccomp`` its seccompProfile (default RuntimeDefault)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": uid_of(sandbox.identity.uid),
        "runAsGroup": uid_of(sandbox.identity.gid),
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": seccomp or {"type": "RuntimeDefault"},
    }


def quantity(size: int) -> str:
    """Bytes as a Kubernetes quantity (exact: Mi where it divides)."""
    for unit, factor in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def resources(sandbox: EffectiveSandbox) -> dict[str, Any]:
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    memory, cpus = sandbox.resources.memory, sandbox.resources.cpus
    if memory is not None:
        limits["memory"] = requests["memory"] = quantity(memory)
    if cpus is not None:
        limits["cpu"] = requests["cpu"] = f"{round(cpus * 1000)}m"
    out: dict[str, Any] = {}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    return out


@dataclass
class PodParts:
    """A server's container and the volumes it needs (added to whatever pod holds it)."""

    container: dict[str, Any]
    volumes: list[dict[str, Any]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


def server_container(
    plan: Plan, sandbox: EffectiveSandbox, secrets: dict[str, SecretSource], proxied: bool, bridge: tuple[str, int] | None, seccomp: dict[str, str]
) -> PodParts:
    """The server's container. ``secrets`` maps each bound secret to its Secret (unbound ones are left out);
    ``proxied`` sets the proxy variables; ``bridge`` (host, port) runs a stdio command behind the stdio-to-HTTP bridge;
    ``seccomp`` is its seccompProfile."""
    name = sandbox.name
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if all(mount.target != SCRATCH for mount in sandbox.mounts):  # two volumes at one mountPath make an invalid pod
        mounts.append({"name": "scratch", "mountPath": SCRATCH})
        volumes.append({"name": "scratch", "emptyDir": {"sizeLimit": SCRATCH_SIZE}})
    for index, mount in enumerate(sandbox.mounts):
        volume = f"{name}-m{index}"
        if mount.kind == "tmpfs":
            volumes.append({"name": volume, "emptyDir": {"medium": "Memory", "sizeLimit": quantity(mount.size)}})
        elif mount.kind == "workspace":
            claim = claim_name(mount.source)
            volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": claim, **({"readOnly": True} if mount.mode == "ro" else {})}})
        else:  # host paths become hostPath volumes, which this target never writes (server_gaps says so)
            continue
        mounts.append({"name": volume, "mountPath": mount.target, **({"readOnly": True} if mount.mode == "ro" else {})})
    env: list[dict[str, Any]] = [{"name": key, "value": kubelet_text(value)} for key, value in sorted(sandbox.env.set.items())]
    if proxied:
        proxy = f"http://{egress_name(name)}:{PROXY_PORT}"
        env = [e for e in env if e["name"] not in PROXY_VARIABLES] + [{"name": v, "value": proxy} for v in PROXY_VARIABLES]
    landings: dict[str, str] = {}
    for index, grant in enumerate(sandbox.secrets):
        source = secrets.get(grant.name)
        if source is None:
            continue
        if grant.env is not None:
            env.append({"name": grant.env, "valueFrom": {"secretKeyRef": {"name": source.secret, "key": source.key}}})
            landings[f"env:{grant.env}"] = grant.name
        elif grant.file is not None:
            volume = f"{name}-s{index}"
            item = posixpath.basename(grant.file) or "value"
            volumes.append({"name": volume, "projected": {"defaultMode": 0o440, "sources": [{"secret": {"name": source.secret, "items": [{"key": source.key, "path": item}]}}]}})
            mounts.append({"name": volume, "mountPath": grant.file, "subPath": item, "readOnly": True})
            landings[f"file:{grant.file}"] = grant.name
    command = [kubelet_text(part) for part in (["/bin/sh", "-c", sandbox.command[0]] if sandbox.command_is_shell else sandbox.command)]
    if not command:
        raise Refused("identity", (*sandbox.path, "command"), f"server {name!r} has no command: a container needs one (the image's entrypoint is not read)")
    ports: list[dict[str, Any]] = []
    if bridge is not None:
        # The bridge starts the command as its child and passes its own environment on.
        host, port = bridge
        command = [BRIDGE[0], "--host", host, "--port", str(port), "--pass-environment", "--", *command]
        ports.append({"name": "mcp", "containerPort": port, "protocol": "TCP"})
    elif isinstance(sandbox.transport, HttpTransport) and sandbox.transport.port is not None:
        ports.append({"name": "mcp", "containerPort": sandbox.transport.port, "protocol": "TCP"})
    deadline = command_deadline(sandbox)
    if deadline is not None:
        command = [*TIMEOUT, f"{deadline}s", *command]
    if not sandbox.image:
        raise Refused("image", sandbox.origin("image"), f"server {name!r} has no image: a Kubernetes container runs one (give image: NAME@sha256:...)")
    container: dict[str, Any] = {"name": name, "image": sandbox.image, "imagePullPolicy": "IfNotPresent", "command": command}
    if sandbox.workdir:
        container["workingDir"] = sandbox.workdir
    if env:
        container["env"] = env
    if ports:
        container["ports"] = ports
        if sandbox.placement != "agent":  # the kubelet reaches a pod's address, not its loopback
            port = ports[0]["containerPort"]
            container["readinessProbe"] = {"tcpSocket": {"port": port}, "periodSeconds": 10}
            container["livenessProbe"] = {"tcpSocket": {"port": port}, "periodSeconds": 20, "failureThreshold": 3}
    container["resources"] = resources(sandbox)
    container["securityContext"] = container_security(sandbox, seccomp)
    container["volumeMounts"] = mounts
    annotations = {SECRET_NAMES: json.dumps(landings, sort_keys=True, separators=(",", ":"))} if landings else {}
    return PodParts(container, volumes, annotations)


def pod_spec(sandbox: EffectiveSandbox, parts: PodParts, service_account: str, restart: str) -> dict[str, Any]:
    return {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "hostNetwork": False,
        "hostPID": False,
        "hostIPC": False,
        "restartPolicy": restart,
        "securityContext": pod_security(sandbox),
        "containers": [parts.container],
        "volumes": parts.volumes,
    }
