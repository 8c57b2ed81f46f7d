"""The loop every target shares: from a Plan to files, gaps and enforcement levels.

For each server the target builds (every server that runs here), the skeleton:

1. asks the target for its data-dependent gaps and lowered levels;
2. compares what the server asks for with the target's capability matrix: every
   control below ``full`` becomes a gap (TG001-TG003 later);
3. lowers the level of every control that has a gap, whatever a waiver says later:
   a waiver accepts a risk, it never raises what the manifest reports;
4. asks the target for the server's files; a value the target cannot write safely
   becomes a TG004 gap, and nothing of that server is written;

then asks the target for the files the built servers share. A target is the
matrix, the gaps and the files; it never repeats this loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.base import CONTROL_BY_ID, BuildOptions, BuildOutput, Capability, Emitted, Gap, Level, Overrides, Refused, Target
from mcpspec.targets.escape import Unrepresentable
from mcpspec.targets.requests import requested_controls

_RANK: dict[Level, int] = {"none": 0, "partial": 1, "full": 2}


def build(target: Target, plan: Plan, options: BuildOptions | None = None) -> BuildOutput:
    """Run ``target`` over every server of ``plan`` that runs here."""
    options = options if options is not None else BuildOptions()
    refuse_unused(target, options)
    output = BuildOutput()
    built: list[EffectiveSandbox] = []
    key = source_target(target, options)
    for name, written in plan.servers.items():
        if not written.runs_here:
            continue
        sandbox = written.for_target(key)  # each secret from this target's own source: never another target's
        own, overrides = target.server_gaps(plan, sandbox, options)
        # A gap at a shared path (defaults) names no server by its path: its finding must still name this one.
        own = [gap if gap.server else dataclasses.replace(gap, server=name) for gap in own]
        matrix, levels = matrix_gaps(sandbox, target.capabilities, overrides)
        gaps = [*own, *matrix]
        lower(levels, gaps)
        try:
            emitted = target.server_files(plan, sandbox, options)
        except Refused as exc:
            gaps.append(Gap(exc.control, "none", exc.path, str(exc), unrepresentable=True, server=name))
        except Unrepresentable as exc:
            gaps.append(Gap("mounts", "none", sandbox.path, str(exc), unrepresentable=True, server=name))
        else:
            _add(output, emitted)
            output.enforcement[name] = levels
            built.append(sandbox)
        output.gaps.extend(gaps)
    try:
        _add(output, target.project_files(plan, built, options))
    except Refused as exc:
        output.gaps.append(Gap(exc.control, "none", exc.path, str(exc), unrepresentable=True))
    return output


def source_target(target: Target, options: BuildOptions) -> str:
    """The target whose secret sources (``secrets.NAME.sources``) this build reads: its own, unless
    it builds another target's sandbox (the client target: `mcpspec run`'s bwrap, or compose)."""
    pick = getattr(target, "secret_source", None)
    return str(pick(options)) if pick is not None else target.name


def refuse_unused(target: Target, options: BuildOptions) -> None:
    """Raise ValueError for an option set for a target that would ignore it."""
    unused = sorted(set(options.given()) - target.options)
    if unused:
        raise ValueError(f"the {target.name} target takes no {', '.join('--' + name.replace('_', '-') for name in unused)}")
    check = getattr(target, "check_options", None)  # a target may need an option (the client target: --client)
    if check is not None:
        check(options)


def matrix_gaps(sandbox: EffectiveSandbox, capabilities: Mapping[str, Capability], overrides: Overrides) -> tuple[list[Gap], dict[str, Level]]:
    """A Gap for every control the server asks for that is not fully enforced here,
    and the level each asked-for control gets."""
    gaps: list[Gap] = []
    levels: dict[str, Level] = {}
    for control, path in requested_controls(sandbox).items():
        level, how = overrides.get(control) or (capabilities[control].level, capabilities[control].how)
        levels[control] = level
        if level != "full":
            gaps.append(Gap(control, level, path, f"{CONTROL_BY_ID[control].title}: {how}", server=sandbox.name))
    return gaps, levels


def lower(levels: dict[str, Level], gaps: list[Gap]) -> None:
    """Lower each control's level to the weakest gap reported for it (a gap of a control the
    server did not ask for records the level too: the manifest never omits a known gap)."""
    for gap in gaps:
        current = levels.get(gap.control)
        if current is None or _RANK[gap.level] < _RANK[current]:
            levels[gap.control] = gap.level


def _add(output: BuildOutput, emitted: Emitted) -> None:
    clash = output.files.keys() & emitted.files.keys()
    if clash:  # two servers may never write one file: one would silently replace the other
        raise AssertionError(f"a target wrote {sorted(clash)} twice")
    output.files.update(emitted.files)
    output.executable |= emitted.executable
