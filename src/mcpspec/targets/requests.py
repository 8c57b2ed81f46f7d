"""Which controls one server asks for, and the spec path that asks.

The build compares these with the target's capability matrix: a control the
target enforces only partly, or not at all, becomes a Gap at that path.
"""

from __future__ import annotations

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import EffectiveSandbox
from mcpspec.targets.egress import egress_plan


def requested_controls(sandbox: EffectiveSandbox) -> dict[str, SpecPath]:
    """control id -> the spec path that asks for it, for every control this server needs."""
    asked: dict[str, SpecPath] = {}
    origin = sandbox.origin
    asked["identity"] = origin("runtime.user")
    asked["hidden-paths"] = sandbox.path
    asked["env"] = origin("env.inherit")
    asked["syscall-filter"] = sandbox.path  # every server gets the project's syscall policy
    if sandbox.mounts:
        asked["mounts"] = (*sandbox.path, "mounts")
    if sandbox.secrets:
        asked["secrets"] = (*sandbox.path, "secrets")
    egress = egress_plan(sandbox)
    asked["egress-deny"] = origin("egress.default")
    if any(d.kind != "cidr" for d in egress.allow):
        asked["egress-allowlist"] = origin("egress.allow")
    if egress.mode != "none":
        asked["metadata-blocking"] = origin("egress.allow") if egress.allow else origin("egress.default")
    if not sandbox.process.listeners:
        asked["listeners"] = origin("process.listeners")
    runtime = sandbox.resources
    if runtime.memory is not None:
        asked["memory"] = origin("runtime.memory")
    if runtime.pids is not None:
        asked["pids"] = origin("runtime.pids")
    if runtime.cpus is not None:
        asked["cpu"] = origin("runtime.cpus")
    if sandbox.lifecycle.max_lifetime is not None:
        asked["lifetime"] = origin("lifecycle.max_lifetime")
    if sandbox.lifecycle.idle_timeout is not None:
        asked["idle-timeout"] = origin("lifecycle.idle_timeout")
    process = sandbox.process
    if process.package_install.allowed:
        asked["package-install"] = origin("process.package_install")
    if process.allow is not None:
        asked["process-policy"] = origin("process.allow")
    elif process.deny:
        asked["process-policy"] = origin("process.deny")
    elif process.max_runtime is not None:
        asked["process-policy"] = origin("process.max_runtime")
    teardown = sandbox.lifecycle.teardown
    if any(m.workspace_dir and not m.tmpfs for m in sandbox.mounts) and teardown.remove_workspace:
        asked["workspace-lifecycle"] = origin("lifecycle.teardown")
    if sandbox.logging.audit:
        asked["audit-log"] = origin("logging.audit")
    if sandbox.image is not None:
        asked["image"] = sandbox.origin("image")
    limits = sandbox.limits
    if limits.requests_per_minute is not None or limits.call_timeout is not None:
        asked["call-policy"] = origin("limits")
    elif any(tool.approval in ("always", "per-session") for tool in sandbox.tools.values()):
        asked["call-policy"] = (*sandbox.path, "tools")
    return asked
