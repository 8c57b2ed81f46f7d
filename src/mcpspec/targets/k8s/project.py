"""The files the built servers share: the kustomization, the namespace, the workspace
claims, the ExternalSecrets and the PodTemplates of the agents' pods."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Emitted, Refused
from mcpspec.targets.k8s.manifest import dump
from mcpspec.targets.k8s.names import AGENT_LABEL, WORKSPACE_DIR, claim_name, egress_name, labels, metadata, namespace
from mcpspec.targets.k8s.network import default_deny
from mcpspec.targets.k8s.secrets import external_secrets
from mcpspec.targets.k8s.workload import container_parts, server_route

CLAIM_SIZE = "1Gi"
PSA = ("enforce", "audit", "warn")


def project_files(plan: Plan, built: Sequence[EffectiveSandbox], options: BuildOptions) -> Emitted:
    files: dict[str, str] = {}
    ns = namespace(plan)
    files["namespace.yaml"] = dump(plan, f"the namespace {ns} and its default deny", [_namespace(plan), default_deny(plan)])
    claims = _claims(plan, built)
    if claims:
        files["workspace.yaml"] = dump(plan, "the workspace dirs' claims", claims)
    secrets = external_secrets(plan, list(built), options)
    if secrets:
        files["secrets.yaml"] = dump(plan, "the ExternalSecrets of the vault secrets", secrets)
    for agent, servers in sorted(_agent_servers(plan, built).items()):
        files[f"agent-{agent}.yaml"] = dump(plan, f"the containers of agent {agent}'s pod", [_agent_template(plan, agent, servers, options)])
    dedicated = [s for s in built if s.placement != "agent"]
    resources = sorted([*files, *(f"{s.name}.yaml" for s in dedicated)])
    kustomization: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": ns, "resources": resources}
    proxied = [s.name for s in dedicated if server_route(s, options)[1].proxy]
    if proxied:
        kustomization["configMapGenerator"] = [{"name": egress_name(n), "files": [f"squid.conf={n}.squid.conf"]} for n in proxied]
    files["kustomization.yaml"] = dump(plan, "the kustomization", [kustomization])
    return Emitted(files)


def _namespace(plan: Plan) -> dict[str, Any]:
    own = labels(plan, namespace(plan), "namespace")
    own.update({f"pod-security.kubernetes.io/{mode}": "restricted" for mode in PSA})
    own.update({f"pod-security.kubernetes.io/{mode}-version": "latest" for mode in PSA})
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(namespace(plan), own, ("project",))}


def _claims(plan: Plan, built: Sequence[EffectiveSandbox]) -> list[dict[str, Any]]:
    dirs = sorted({m.source for s in built for m in s.mounts if m.kind == "workspace"})
    out = []
    for directory in dirs:
        meta = metadata(claim_name(directory), labels(plan, claim_name(directory), "workspace"), ("workspace", "dirs", directory))
        meta["annotations"][WORKSPACE_DIR] = directory  # a label value may not end with '-' or '_', a dir name may
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": CLAIM_SIZE}}}})
    return out


def _agent_servers(plan: Plan, built: Sequence[EffectiveSandbox]) -> dict[str, list[EffectiveSandbox]]:
    out: dict[str, list[EffectiveSandbox]] = {}
    for sandbox in built:
        if sandbox.placement != "agent":
            continue
        if not sandbox.agents:
            raise Refused("identity", sandbox.origin("placement"), f"server {sandbox.name!r} has placement: agent, but no agent lists it: there is no pod to put it in")
        for agent in sandbox.agents:
            out.setdefault(agent, []).append(sandbox)
    return out


def _agent_template(plan: Plan, agent: str, servers: list[EffectiveSandbox], options: BuildOptions) -> dict[str, Any]:
    containers: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    annotations: dict[str, str] = {}
    for sandbox in servers:
        parts = container_parts(plan, sandbox, options)
        containers.append(parts.container)
        volumes += [v for v in parts.volumes if v["name"] != "scratch" or all(x["name"] != "scratch" for x in volumes)]
        annotations.update({f"{k}.{sandbox.name}": v for k, v in parts.annotations.items()})
    first = servers[0]
    own = labels(plan, agent, "agent") | {AGENT_LABEL: agent}
    security = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    if len({s.identity.gid for s in servers}) == 1:
        security["fsGroup"] = first.identity.gid or 65532
    meta = metadata(agent, own, ("agents", agent))
    return {
        "apiVersion": "v1", "kind": "PodTemplate", "metadata": meta,
        "template": {
            "metadata": {"labels": own, "annotations": {**meta["annotations"], **annotations}},
            "spec": {"automountServiceAccountToken": False, "enableServiceLinks": False, "restartPolicy": "Always", "securityContext": security,
                     "containers": containers, "volumes": volumes},
        },
    }
