"""With ``--target``: the controls a target enforces less well in the new version.

Both Plans are run through the target's skeleton (nothing is written); a control a server
asks for in both versions whose level fell (full > partial > none) grew, one whose level
rose shrank. A server built in the old version and refused in the new loses every control.
"""

from __future__ import annotations

from mcpspec.diff.model import Change
from mcpspec.ir.plan import Plan
from mcpspec.targets import get_target, skeleton
from mcpspec.targets.base import CONTROL_BY_ID, CONTROLS, Level

RANK: dict[Level, int] = {"none": 0, "partial": 1, "full": 2}


def levels(plan: Plan, target: str) -> dict[str, dict[str, Level]]:
    """Server -> control -> the level the target enforces (servers the target builds)."""
    return skeleton.build(get_target(target), plan).enforcement


def compare_enforcement(old: Plan, new: Plan, target: str) -> list[Change]:
    before, after = levels(old, target), levels(new, target)
    changes: list[Change] = []
    for server in sorted(before.keys() & new.servers.keys()):
        now = after.get(server)
        if now is None:
            if new.servers[server].runs_here:
                changes.append(Change(server, "enforcement", "grew", f"{target} no longer builds server {server}: its controls are not enforced", "built", "refused"))
            continue
        for control in CONTROLS:
            a, b = before[server].get(control.id), now.get(control.id)
            if a is None or b is None or a == b:
                continue
            dropped = RANK[b] < RANK[a]
            changes.append(Change(
                server, "enforcement", "grew" if dropped else "shrank",
                f"{target} enforces {CONTROL_BY_ID[control.id].title} {'less' if dropped else 'more'}: {a} -> {b}", a, b,
            ))
    return changes
