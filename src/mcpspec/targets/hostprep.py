"""The host preparation a bwrap or systemd build comes with: a systemd-tmpfiles.d file.

It creates the directories the bwrap launcher (or the systemd units' audit helper) checks
before it starts a server, and nothing else: each root's, with the narrowest mode the launcher
accepts (the audit directory, 0700) or the mode it would make itself (the workspace root, 0711).
Every line is create-only (``:`` before the mode and owners): an existing directory is never
changed, so the file cannot widen or take over one; a wrong one is the launcher's to report.
A path the file cannot carry as written is left out, with a comment saying what to make by hand:
the build goes on, and the launcher names that directory when it is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.targets.comments import comment_line
from mcpspec.targets.common import header_text

OWNER = "root"  # the launcher runs as root (as the MCP client does); the units' helper always does
AUDIT_DIR_MODE = 0o700  # the launcher needs its sink's directory root's and writable by no one else
WORKSPACE_ROOT_MODE = 0o711  # what the launcher makes itself: bwrap, as the sandbox's uid, passes through it
# What a tmpfiles.d path carries as written in every systemd version: systemd 252 drops a backslash
# before any character instead of reading a C escape, so nothing is escaped but "%" (a specifier).
_SAFE_PATH = re.compile(r"/[A-Za-z0-9/._+,:=@%-]*\Z")
# Kernel filesystems (a directory made there is a kernel object: a cgroup, a configfs item) and the
# directories the OS's own tmpfiles.d lines make at every boot. Installed in /etc/tmpfiles.d, a line
# for a path another file also names wins when its file name sorts first ("acme" before "legacy"),
# so `d /run/lock :0700` would make /run/lock root's 0700 at every boot in place of the OS's 0755.
_NOT_OURS = ("/proc", "/sys", "/dev", "/run", "/var/run")
_LEAST_DEPTH = 3  # /var/log, /srv/mcp, /opt/x: a system directory or one a package may own


@dataclass(frozen=True)
class HostDir:
    """A directory the launcher checks: its path, its mode, and why it is needed."""

    path: str
    mode: int
    why: str


def tmpfiles_name(plan: Plan) -> str:
    return f"{plan.project}.tmpfiles.conf"


def tmpfiles_path(path: str) -> str:
    """``path`` as a tmpfiles.d path field; ``ValueError`` for one it cannot carry as written."""
    if not _SAFE_PATH.match(path) or path == "/":
        raise ValueError("systemd-tmpfiles reads only letters, digits and / . _ + , : = @ % - in a path as written")
    parts = path.split("/")[1:]
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError("systemd-tmpfiles takes only a normalized path (no empty, '.' or '..' component)")
    return path.replace("%", "%%")


def not_ours(path: str) -> str | None:
    """Why the file must not name ``path`` (a directory the kernel or the OS makes), or None."""
    for top in _NOT_OURS:
        if path == top or path.startswith(top + "/"):
            return f"under {top}, which the kernel or the OS's own tmpfiles.d lines make"
    if path.count("/") < _LEAST_DEPTH:
        return f"fewer than {_LEAST_DEPTH} levels deep: a system directory, or one the OS's own tmpfiles.d lines may name"
    return None


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def audit_dir(sandbox: EffectiveSandbox) -> HostDir | None:
    """The audit sink's directory (None: no file sink, one under ~, or a sink in /)."""
    sink = sandbox.logging.sink
    if not sandbox.logging.audit or sink.kind != "file" or sink.path is None or sink.path.in_home:
        return None
    directory = _parent(sink.path.path)
    if directory == "/":
        return None
    return HostDir(directory, AUDIT_DIR_MODE, f"the audit sink of server {sandbox.name}")


def workspace_root(plan: Plan, sandbox: EffectiveSandbox) -> HostDir | None:
    """The workspace root, when the server's launcher makes a run directory in it."""
    workspace = plan.workspace
    if workspace is None or not any(mount.kind == "workspace" for mount in sandbox.mounts):
        return None
    root = workspace.root
    if root.startswith("~") or root == "/":  # under the launching user's home: not a host-wide directory
        return None
    return HostDir(root, WORKSPACE_ROOT_MODE, f"the workspaces of server {sandbox.name}")


def bwrap_dirs(plan: Plan, sandbox: EffectiveSandbox) -> list[HostDir]:
    return [item for item in (audit_dir(sandbox), workspace_root(plan, sandbox)) if item is not None]


def systemd_dirs(plan: Plan, sandbox: EffectiveSandbox) -> list[HostDir]:
    # The units' ExecStopPost helper makes a missing sink directory itself (0700: mode 0750 under
    # umask 077); the file lists it so the first stop does not have to.
    return [item for item in (audit_dir(sandbox),) if item is not None]


def merged(dirs: Iterable[HostDir]) -> list[HostDir]:
    """One entry per path (tmpfiles.d refuses two lines for one path): the modes' union, every reason."""
    by_path: dict[str, HostDir] = {}
    for item in dirs:
        seen = by_path.get(item.path)
        if seen is None:
            by_path[item.path] = item
        else:
            why = seen.why if item.why in seen.why.split("; ") else f"{seen.why}; {item.why}"
            by_path[item.path] = HostDir(item.path, seen.mode | item.mode, why)
    return sorted(by_path.values(), key=lambda item: item.path)


def tmpfiles_lines(item: HostDir) -> list[str]:
    """A comment saying why, and the create-only line; or, for a path tmpfiles.d cannot carry, what to make by hand."""
    try:
        path = tmpfiles_path(item.path)
        reason = not_ours(item.path)
        if reason is not None:
            raise ValueError(reason)
    except ValueError as exc:
        return [comment_line(f"Left out ({item.why}): {item.path} ({exc}). Make it by hand if it is missing: "
                             f"a directory of {OWNER}'s, mode {item.mode:04o}.")]
    return [comment_line(item.why), f"d {path} :{item.mode:04o} :{OWNER} :{OWNER} - -"]


def tmpfiles_text(plan: Plan, dirs: Sequence[HostDir], target: str) -> str:
    """The file: a header, how to apply it, then one create-only ``d`` line per directory."""
    name = tmpfiles_name(plan)
    lines = [comment_line(text) for text in header_text(plan, f"the host directories the {target} build needs")]
    lines += [
        comment_line(f"Apply it once per host, as root, by its absolute path: systemd-tmpfiles --create \"$PWD/{name}\""),
        comment_line(f"(a bare name is looked up in /etc/tmpfiles.d/: install -m 0644 {name} /etc/tmpfiles.d/ also applies it at every boot)."),
        comment_line("Each line only creates what is missing (the ':' prefix): an existing directory is left as it is."),
    ]
    if not dirs:
        lines.append(comment_line("This build needs no host directory."))
    for item in dirs:
        lines += tmpfiles_lines(item)
    return "\n".join(lines) + "\n"
