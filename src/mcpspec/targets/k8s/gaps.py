"""What a server asks for that the k8s target cannot give it, beyond the capability matrix."""

from __future__ import annotations

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import BuildOptions, Gap, Level, Overrides
from mcpspec.targets.egress import egress_plan
from mcpspec.targets.k8s.network import route
from mcpspec.targets.k8s.pod import command_deadline
from mcpspec.targets.k8s.seccomp import LOCALHOST
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
    if command_deadline(sandbox) is not None:
        where = "a server in the agent's pod" if sandbox.placement == "agent" else f"lifecycle.mode {sandbox.lifecycle.mode} (a Deployment)"
        overrides["lifetime"] = ("partial", f"{where} has no pod deadline: the container runs its command under timeout(1) (the image needs coreutils' timeout), "
                                            "which stops it at max_lifetime (SIGTERM, SIGKILL 5 s later); the kubelet then starts it afresh in the same pod, "
                                            "with the same volumes; not run here")
    if options.seccomp_localhost is not None:
        overrides["syscall-filter"] = ("partial", LOCALHOST.format(dir=options.seccomp_localhost))
    pids = _pids(sandbox, options)
    if pids is not None:
        overrides["pids"] = pids
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


def _pids(sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[Level, str] | None:
    """The process limit as the operator states the nodes' podPidsLimit (--pod-pids-limit): it bounds
    the server only when it is no more than the spec asks for."""
    asked, limit = sandbox.resources.pids, options.pod_pids_limit
    if asked is None or limit is None:
        return None
    if limit > asked:
        return ("none", f"--pod-pids-limit {limit}: the nodes' kubelet lets a pod run {limit} processes, more than runtime.pids {asked}; "
                        "a pod spec has no process limit of its own")
    return ("partial", f"the nodes' kubelet bounds each pod at {limit} processes (--pod-pids-limit {limit}, at most runtime.pids {asked}); "
                       "a pod spec has no process limit, so these files cannot check that the nodes set podPidsLimit")
