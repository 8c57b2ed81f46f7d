"""Host-path questions the filesystem rules share.

A mount source is a normalized host path. The same place can be spelled more
than one way (``/home/alice/.ssh`` is ``~/.ssh`` for alice, ``/var/run`` is a
symlink to ``/run``), so matching tries every spelling.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.rules.facts import components, contains, launched
from mcpspec.spec.models import Mount

UID = "{uid}"
# Directories under which the second component is one user's home.
_HOME_PARENTS = ("/home", "/Users")


def spellings(source: str) -> tuple[str, ...]:
    """``source`` and the other spellings of the same host place."""
    forms = [source]
    parts = components(source)
    if len(parts) >= 3 and "/" + parts[1] in _HOME_PARENTS:
        forms.append("/".join(["~", *parts[3:]]))
    elif len(parts) >= 2 and parts[1] == "root":
        forms.append("/".join(["~", *parts[2:]]))
    if source == "/var/run" or source.startswith("/var/run/"):
        forms.append(source.removeprefix("/var"))
    elif source == "/run" or source.startswith("/run/"):
        forms.append("/var" + source)
    return tuple(forms)


def _instantiate(pattern: str, source: str) -> str:
    """Fill a ``{uid}`` component of ``pattern`` with the source's component at that place."""
    if UID not in pattern:
        return pattern
    theirs = components(source)
    parts = [theirs[i] if part == UID and i < len(theirs) else ("0" if part == UID else part) for i, part in enumerate(components(pattern))]
    return "/".join(parts)


def overlapping(source: str, patterns: tuple[str, ...]) -> list[tuple[str, bool]]:
    """(pattern, mount is inside it) for each pattern that ``source`` overlaps.

    "Inside" means the mount is the pattern's path or below it; otherwise the
    mount is an ancestor that holds it.
    """
    found: list[tuple[str, bool]] = []
    for pattern in patterns:
        for form in spellings(source):
            concrete = _instantiate(pattern, form)
            # /root "contains" ~ only when the user is root: no reason to assume it.
            if (concrete.startswith("~") or not form.startswith("~")) and contains(concrete, form):
                found.append((pattern, True))
                break
            if contains(form, concrete):
                found.append((pattern, False))
                break
    return found


def host_mounts(server: EffectiveSandbox) -> Iterator[EffectiveMount]:
    """The mounts of host paths (not workspace dirs)."""
    return (mount for mount in server.mounts if mount.workspace_dir is None)


def launched_host_mounts(plan: Plan) -> Iterator[tuple[EffectiveSandbox, EffectiveMount]]:
    for server in launched(plan):
        for mount in host_mounts(server):
            yield server, mount


def spec_mount(plan: Plan, mount: EffectiveMount) -> Mount:
    """The mount as written in the file."""
    _, server, _, index = mount.path
    return plan.spec.servers[str(server)].mounts[int(index)]


def mode_path(plan: Plan, mount: EffectiveMount) -> tuple[str | int, ...]:
    """Where the mount's mode is written, or its ``from`` when the mode comes from a workspace dir."""
    return (*mount.path, "mode") if spec_mount(plan, mount).mode is not None else (*mount.path, "from")


def listing(paths: list[str], limit: int = 3) -> str:
    """``a, b and c`` or ``a, b, c and 4 more``."""
    shown = paths[:limit]
    rest = len(paths) - len(shown)
    if rest:
        return f"{', '.join(shown)} and {rest} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
