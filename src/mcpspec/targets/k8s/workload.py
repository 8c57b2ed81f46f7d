"""The objects of one server: its ServiceAccount, its Deployment or Job, its Service, its
network policies and, with an allowlist through the proxy, its egress proxy."""

from __future__ import annotations

import math
import re
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import IMAGE_PATTERN, HttpTransport
from mcpspec.targets.base import BuildOptions, Refused
from mcpspec.targets.common import header_text
from mcpspec.targets.egress import EgressPlan, egress_plan, squid_config
from mcpspec.targets.k8s.gaps import workload_kind
from mcpspec.targets.k8s.names import BRIDGE_PORT, PROXY_PORT, ROLE_LABEL, egress_name, labels, metadata, selector, server_labels
from mcpspec.targets.k8s.network import Route, cilium_policy, proxy_policy, route, server_policy
from mcpspec.targets.k8s.pod import PodParts, container_security, pod_security, server_container
from mcpspec.targets.k8s.seccomp import seccomp_profile
from mcpspec.targets.k8s.secrets import sources

TTL_AFTER_FINISHED = 600
SQUID_CONF = "/etc/mcpspec-squid/squid.conf"
_PINNED = re.compile(IMAGE_PATTERN)


def server_route(sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[EgressPlan, Route]:
    egress = egress_plan(sandbox)
    return egress, route(egress, options.proxy_image, options.egress == "cilium")


def bridge_of(plan: Plan, sandbox: EffectiveSandbox) -> tuple[str, int] | None:
    """Where the stdio-to-HTTP bridge listens: every pod address for a dedicated server, the
    agent pod's loopback (a port of its own per server) for a server in the agent's pod."""
    if isinstance(sandbox.transport, HttpTransport):
        return None
    if sandbox.placement == "agent":
        return "127.0.0.1", BRIDGE_PORT + 20 + list(plan.servers).index(sandbox.name)
    return "0.0.0.0", BRIDGE_PORT


def listen_port(plan: Plan, sandbox: EffectiveSandbox) -> int | None:
    bridge = bridge_of(plan, sandbox)
    if bridge is not None:
        return bridge[1]
    assert isinstance(sandbox.transport, HttpTransport)
    return sandbox.transport.port


def container_parts(plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> PodParts:
    _egress, chosen = server_route(sandbox, options)
    return server_container(plan, sandbox, sources(sandbox, options), chosen.proxy, bridge_of(plan, sandbox), seccomp_profile(sandbox, options))


def server_objects(plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[dict[str, Any]], str | None]:
    """The objects of one dedicated server, and its squid.conf (None: no proxy)."""
    egress, chosen = server_route(sandbox, options)
    parts = container_parts(plan, sandbox, options)
    name = sandbox.name
    pod_labels = {**server_labels(plan, sandbox), **selector(name, "server")}
    template = {"metadata": {"labels": pod_labels, "annotations": {**metadata(name, {}, sandbox.path)["annotations"], **parts.annotations}}}
    objects: list[dict[str, Any]] = [_service_account(plan, name, server_labels(plan, sandbox), sandbox.path)]
    kind = workload_kind(sandbox)
    if kind == "Job":
        spec: dict[str, Any] = {"backoffLimit": 0, "ttlSecondsAfterFinished": TTL_AFTER_FINISHED}
        lifetime = sandbox.lifecycle.max_lifetime
        if lifetime is not None:
            spec["activeDeadlineSeconds"] = max(1, math.ceil(lifetime))
        spec["template"] = {**template, "spec": _pod(sandbox, parts, "Never")}
        objects.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata(name, server_labels(plan, sandbox), sandbox.path), "spec": spec})
    else:
        objects.append({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata(name, server_labels(plan, sandbox), sandbox.path),
            "spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": selector(name, "server")},
                     "template": {**template, "spec": _pod(sandbox, parts, "Always")}},
        })
    port = listen_port(plan, sandbox)
    if port is not None:
        objects.append({"apiVersion": "v1", "kind": "Service", "metadata": metadata(name, server_labels(plan, sandbox), sandbox.path),
                        "spec": {"type": "ClusterIP", "selector": selector(name, "server"), "ports": [{"name": "mcp", "port": port, "targetPort": port, "protocol": "TCP"}]}})
    policy = server_policy(plan, sandbox, egress, chosen, port)
    if policy is not None:
        objects.append(policy)
    if chosen.cilium:
        cilium = cilium_policy(plan, sandbox, egress)
        if cilium is not None:
            objects.append(cilium)
    squid = None
    if chosen.proxy:
        assert options.proxy_image is not None
        objects += proxy_objects(plan, sandbox, egress, options.proxy_image)
        squid = squid_config(egress, [*header_text(plan, f"the egress allowlist of server {name}"), "Mounted from a ConfigMap by its egress proxy."],
                             [f"http_port {PROXY_PORT}", "pid_filename /tmp/squid.pid", "cache_log stdio:/dev/stderr", "coredump_dir /tmp"])
        squid += "access_log stdio:/dev/stdout mcpspec\n"
    return objects, squid


def _pod(sandbox: EffectiveSandbox, parts: PodParts, restart: str) -> dict[str, Any]:
    from mcpspec.targets.k8s.pod import pod_spec

    return pod_spec(sandbox, parts, sandbox.name, restart)


def _service_account(plan: Plan, name: str, labels_: dict[str, str], path: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, labels_, path), "automountServiceAccountToken": False}


def proxy_objects(plan: Plan, sandbox: EffectiveSandbox, egress: EgressPlan, image: str) -> list[dict[str, Any]]:
    if "@sha256:" not in image or not _PINNED.match(image):
        raise Refused("egress-allowlist", sandbox.origin("egress.allow"), "--proxy-image must be an image pinned by digest (NAME@sha256:...)")
    name = egress_name(sandbox.name)
    path = (*sandbox.path, "egress")
    own = labels(plan, name, "egress-proxy", sandbox.name)
    security = pod_security(sandbox) | {"runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532}
    container = {
        "name": "squid", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["squid", "-N", "-f", SQUID_CONF],
        "ports": [{"name": "proxy", "containerPort": PROXY_PORT, "protocol": "TCP"}],
        "readinessProbe": {"tcpSocket": {"port": PROXY_PORT}, "periodSeconds": 10},
        "livenessProbe": {"tcpSocket": {"port": PROXY_PORT}, "periodSeconds": 20, "failureThreshold": 3},
        "resources": {"limits": {"memory": "128Mi", "cpu": "200m"}, "requests": {"memory": "128Mi", "cpu": "200m"}},
        "securityContext": container_security(sandbox) | {"runAsUser": 65532, "runAsGroup": 65532},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/mcpspec-squid", "readOnly": True}, {"name": "scratch", "mountPath": "/tmp"}],
    }
    pod = {
        "serviceAccountName": name, "automountServiceAccountToken": False, "enableServiceLinks": False, "restartPolicy": "Always",
        "securityContext": security, "containers": [container],
        "volumes": [{"name": "config", "configMap": {"name": name}}, {"name": "scratch", "emptyDir": {"sizeLimit": "64Mi"}}],
    }
    pod_labels = {**own, **selector(sandbox.name, "egress-proxy")}
    return [
        _service_account(plan, name, own, path),
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata(name, own, path),
         "spec": {"replicas": 1, "selector": {"matchLabels": selector(sandbox.name, "egress-proxy")},
                  "template": {"metadata": {"labels": pod_labels, "annotations": metadata(name, {}, path)["annotations"]}, "spec": pod}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": metadata(name, own, path),
         "spec": {"type": "ClusterIP", "selector": selector(sandbox.name, "egress-proxy"), "ports": [{"name": "proxy", "port": PROXY_PORT, "targetPort": PROXY_PORT, "protocol": "TCP"}]}},
        proxy_policy(plan, sandbox, egress),
    ]


__all__ = ["ROLE_LABEL", "container_parts", "server_objects", "server_route"]
