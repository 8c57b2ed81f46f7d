"""Mount questions the filesystem rules share: which mounts to check, and where a mount's mode is written."""

from __future__ import annotations

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.rules.facts import host_mounts, launched
from mcpspec.spec.models import Mount


def launched_host_mounts(plan: Plan) -> tuple[tuple[EffectiveSandbox, EffectiveMount], ...]:
    """(server, mount) for each host-path mount of each launched server, listed once per plan
    (most filesystem rules ask, and most servers mount only workspace dirs)."""
    found = plan.derived.get("launched_host_mounts")
    if not isinstance(found, tuple):
        found = plan.derived["launched_host_mounts"] = tuple([(server, mount) for server in launched(plan) for mount in host_mounts(server)])
    return found


def spec_mount(plan: Plan, mount: EffectiveMount) -> Mount:
    """The mount as written in the file."""
    _, server, _, index = mount.path
    return plan.spec.servers[str(server)].mounts[int(index)]


def mode_path(plan: Plan, mount: EffectiveMount) -> tuple[str | int, ...]:
    """Where the mount's mode is written, or its ``from`` when the mode comes from a workspace dir."""
    return (*mount.path, "mode") if spec_mount(plan, mount).mode is not None else (*mount.path, "from")
