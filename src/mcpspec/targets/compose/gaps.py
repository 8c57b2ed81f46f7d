"""What a server asks for that the compose target cannot give it, beyond the capability matrix."""

from __future__ import annotations

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.spec.models import HttpTransport
from mcpspec.targets.base import BuildOptions, Gap, Overrides
from mcpspec.targets.compose.service import PROVIDERS
from mcpspec.targets.egress import egress_plan

_DIGEST = "@sha256:"


def server_gaps(plan: Plan, sandbox: EffectiveSandbox, options: BuildOptions) -> tuple[list[Gap], Overrides]:
    gaps: list[Gap] = []
    overrides: Overrides = {}
    image = sandbox.origin("image")
    if sandbox.image is not None and _DIGEST not in sandbox.image:
        # The boundary comes from the compose file (user, capabilities, mounts, network), not from the
        # image; what runs inside is the supply chain's policy, reported as such.
        gaps.append(Gap("image", "none", image, f"image {sandbox.image} is not pinned by digest: the engine runs whatever the tag names when it pulls"))
    egress = egress_plan(sandbox)
    if egress.mode == "proxy":
        _proxy_gaps(sandbox, options, gaps, overrides)
    elif egress.mode == "direct-open":
        _direct_gaps(sandbox, overrides)
    if egress.mode != "direct-open" and isinstance(sandbox.transport, HttpTransport):
        _port_gaps(sandbox, options, gaps)
    for grant in sandbox.secrets:
        if grant.provider not in PROVIDERS:
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "provider"),
                            f"secret {grant.name!r}: compose reads secrets from a file or from its own environment, not from {grant.provider}; it is not handed over"))
        elif grant.source is not None and not grant.source.in_home and _under_writable(plan, grant.source.path):
            gaps.append(Gap("secrets", "none", (*grant.secret_path, "ref"),
                            f"secret {grant.name!r}: {grant.ref} lies in a directory a server of this spec can write, and the engine reads it as root following links: "
                            "a sandbox could swap it for a link to any host file; keep secrets outside writable mounts"))
    return gaps, overrides


def _proxy_gaps(sandbox: EffectiveSandbox, options: BuildOptions, gaps: list[Gap], overrides: Overrides) -> None:
    if options.proxy_image is None:
        reason = "no egress proxy image was given (--proxy-image NAME@sha256:...): the server gets no network at all"
        overrides["egress-allowlist"] = ("none", reason)
        gaps.append(Gap("egress-allowlist", "none", sandbox.origin("egress.allow"), f"egress allowlist by name: {reason}"))
    elif _DIGEST not in options.proxy_image:
        overrides["egress-allowlist"] = ("partial", f"the egress proxy image {options.proxy_image} is not pinned by digest: what enforces the allowlist can change under it")


def _port_gaps(sandbox: EffectiveSandbox, options: BuildOptions, gaps: list[Gap]) -> None:
    """An HTTP server off every bridge is reached only through its port service, which runs the proxy image."""
    if options.proxy_image is None:
        gaps.append(Gap("listeners", "partial", (*sandbox.path, "transport"),
                        "no --proxy-image: the port service that publishes the server's port runs that image (socat), so the server runs on loopback only (unreachable)"))


def _direct_gaps(sandbox: EffectiveSandbox, overrides: Overrides) -> None:
    egress = egress_plan(sandbox)
    if egress.default == "deny" or egress.deny:
        overrides["egress-deny"] = ("none", "egress.via: direct gives the server its own bridge network with every address open: compose has no IP rules; set egress.via: proxy")
    if egress.allow and any(d.kind != "cidr" for d in egress.allow):
        overrides["egress-allowlist"] = ("none", "egress.via: direct cannot filter by name; set egress.via: proxy")
    overrides["metadata-blocking"] = ("none", "egress.via: direct: compose cannot refuse metadata or private addresses; set egress.via: proxy")
    if not sandbox.process.listeners:
        overrides["listeners"] = ("partial", "a bridge network: a listener is reachable from the host through the container's address (ports are published on 127.0.0.1 only)")


def _under_writable(plan: Plan, path: str) -> bool:
    """Whether a server that runs here mounts ``path``, or a directory above it, writable from the host."""
    tops = _writable_tops(plan)
    if "" in tops or path in tops:
        return True
    return any(path[:index] in tops for index, char in enumerate(path) if char == "/")  # path starts with top + "/"


def _writable_tops(plan: Plan) -> frozenset[str]:
    """The host sources (without a final /) that the servers that run here mount writable; made
    once per plan, as every server's file secrets are checked against every server's mounts."""
    tops = plan.derived.get("compose_writable_tops")
    if not isinstance(tops, frozenset):
        tops = plan.derived["compose_writable_tops"] = frozenset(
            mount.source.rstrip("/")
            for sandbox in plan.servers.values() if sandbox.runs_here
            for mount in sandbox.mounts if mount.kind == "host" and mount.writable
        )
    return tops
