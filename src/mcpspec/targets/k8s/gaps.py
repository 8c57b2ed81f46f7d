"""What a server asks for that the k8s target cannot give it, beyond the capability matrix."""

from __future__ import annotations

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Gap, Overrides
from mcpspec.targets.egress import egress_plan
from mcpspec.targets.k8s.network import route
from mcpspec.targets.k8s.secrets import secret_gaps

NETWORK_CONTROLS = ("egress-deny", "egress-allowlist", "metadata-blocking", "listeners")


def workload_kind(sandbox: EffectiveSandbox) -> str:
    return "Job" if sandbox.lifecycle.mode == "per-task" else "Deployment"


def server_gaps(plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
    gaps: list[Gap] = []
    overrides: Overrides = {}
    for mount in sandbox.mounts:
        if mount.kind in ("host", "home"):
            gaps.append(Gap("mounts", "none", (*mount.path, "from"),
                            f"mount from {mount.location}: a pod would need a hostPath volume, which this target never writes (it reaches the node, not the agent's files); use a workspace dir (a PersistentVolumeClaim)"))
    gaps += secret_gaps(sandbox, options)
    if sandbox.env.inherit != "none":
        overrides["env"] = ("partial", "a pod has no invoking user whose environment it could inherit: env.inherit is ignored, only env.set is passed")
    if sandbox.placement == "agent":
        for control in NETWORK_CONTROLS:
            overrides[control] = ("none", "placement: agent puts the server in the agent's pod, which shares one network namespace and one NetworkPolicy with the agent; this build writes no policy for the agent's pod (use placement: dedicated)")
    if workload_kind(sandbox) == "Deployment" and sandbox.lifecycle.max_lifetime is not None:
        overrides["lifetime"] = ("none", f"lifecycle.mode {sandbox.lifecycle.mode} runs as a Deployment, whose pods have no deadline (activeDeadlineSeconds is refused in a Deployment's template); per-task runs as a Job with activeDeadlineSeconds")
    egress = egress_plan(sandbox)
    chosen = route(egress, options.proxy_image, options.egress == "cilium")
    names = [d for d in egress.allow if d.kind != "cidr"]
    if egress.mode == "proxy" and not chosen.proxy and not chosen.cilium and options.egress == "proxy":
        control = "egress-allowlist" if names else "metadata-blocking"
        gaps.append(Gap(control, "none", sandbox.origin("egress.allow") if egress.allow else sandbox.origin("egress.default"),
                        "the egress proxy's image is a build input: build with --proxy-image NAME@sha256:... (or --egress cilium); without it the server gets no egress at all"))
    if egress.mode == "direct-open" and names and options.egress != "cilium":
        overrides["egress-allowlist"] = ("none", f"direct egress to {', '.join(d.text for d in names)}: a NetworkPolicy cannot allow by name; set egress.via: proxy, or build with --egress cilium")
    if not chosen.proxy and egress.mode != "none":
        loose = [d.text for d in egress.deny if d.kind != "cidr" or d.port is not None]
        if loose and (egress.default == "allow" or any(d.kind == "wildcard" for d in egress.allow)):
            gaps.append(Gap("egress-deny", "none", sandbox.origin("egress.deny"),
                            f"egress.deny {', '.join(loose)}: without the proxy, names and single ports cannot be refused inside what the policy allows; set egress.via: proxy"))
    return gaps, overrides
