"""
## What it does
Flags a read-write mount of a host directory that looks like a project
checkout: a directory in a home (`~/notes`, `/home/alice/app`,
`/Users/bob/site`), a directory over homes (`~`, `/home`, `/Users`, `/root`,
`/`), or a path with a component such as `src`, `projects`, `repos`, `git`,
`workspace`, `code`, `dev` or `checkouts`. Hidden directories of a home
(`~/.local/share/...`), state directories such as `/var/lib/<name>`, tmpfs,
workspace dirs and paths inside the workspace root are not flagged, nor a mount whose `.git` the same server
mounts read-only on top of it.

## Why is this risky
A project directory is usually a git checkout, and git runs code from it:
hooks (`.git/hooks/pre-commit`), `core.fsmonitor`, `core.sshCommand` and
filters in `.git/config` all execute on the developer's machine the next
time someone runs git there. A server that can write the checkout can write
its `.git` too, even though the mounted path does not say `.git` (which is
all FS006 sees), and it can add a `.envrc` or a `.vscode/tasks.json` that the
developer's tools run. The sandbox then ends at the developer's next
`git status`.

## Example
```yaml
version: 1
project: demo
servers:
  git:
    command: [mcp-server-git, --repository, /repo]
    mounts:
      - {from: ~/projects/app, to: /repo, mode: rw}
```

## Use instead
Mount the checkout read-only and give the server a workspace dir for what it
writes, or mount its `.git` read-only over the writable checkout:
```yaml
version: 1
project: demo
servers:
  git:
    command: [mcp-server-git, --repository, /repo]
    mounts:
      - {from: ~/projects/app, to: /repo, mode: rw}
      - {from: ~/projects/app/.git, to: /repo/.git, mode: ro}
```

## References
- git documentation: githooks(5), `core.fsmonitor` and `core.hooksPath` in git-config(1)
- OWASP MCP Top 10: MCP05 Command Injection & Execution
- CWE-94 Improper Control of Generation of Code
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveMount, EffectiveSandbox, Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import components, contains, spellings
from mcpspec.rules.filesystem._common import launched_host_mounts, mode_path
from mcpspec.rules.filesystem.vcs_or_env_writable import flagged as fs006_flags

# Path components that name where people keep checkouts.
PROJECT_NAMES = frozenset(
    {"src", "source", "sources", "project", "projects", "repo", "repos", "repositories", "git", "workspace", "workspaces",
     "code", "dev", "devel", "checkout", "checkouts", "work", "github", "gitlab"}
)
HOMES = ("/", "/home", "/Users", "/root", "~")
# System and state directories: what lives there is not a checkout.
SYSTEM = ("/var", "/run", "/tmp", "/proc", "/sys", "/dev", "/etc", "/usr", "/opt", "/nix", "/boot")


def looks_like_project(source: str) -> str | None:
    """Why a host path looks like a project directory, or None."""
    if source == "~":
        return "it is a home directory, where checkouts live"
    if source in HOMES:
        return "it holds home directories, and the checkouts in them"
    home_form = next((form for form in spellings(source) if form.startswith("~/")), None)
    if home_form is not None:
        first = components(home_form)[1]
        if not first.startswith("."):
            return "it is a directory in a home, where checkouts live"
    if any(contains(system, source) for system in SYSTEM):
        return None
    named = next((part for part in components(source) if part.lower() in PROJECT_NAMES), None)
    if named is not None:
        return f"its path has {named!r}, where checkouts live"
    return None


def _git_protected(server: EffectiveSandbox, mount: EffectiveMount) -> bool:
    """Whether the server mounts the checkout's .git read-only over this mount."""
    target = mount.target.rstrip("/") + "/.git"
    return any(other.target == target and not other.writable for other in server.mounts)


def _in_workspace(plan: Plan, source: str) -> bool:
    """Whether a host path lies in the spec's workspace root (per-run directories mcpspec makes, not checkouts)."""
    return plan.workspace is not None and contains(plan.workspace.root, source)


def check(plan: Plan) -> Iterator[Finding]:
    for server, mount in launched_host_mounts(plan):
        if not mount.writable or fs006_flags(mount.location) or _git_protected(server, mount) or _in_workspace(plan, mount.location):
            continue
        why = looks_like_project(mount.location)
        if why is not None:
            yield Finding(
                path=mode_path(plan, mount),
                message=f"server {server.name!r} can write {mount.location}, which looks like a project directory ({why}): "
                "if it is or holds a git checkout, the server can write its .git hooks and config, which run on the developer's machine",
            )


RULE = Rule(
    id="FS009",
    slug="project-dir-writable",
    severity="medium",
    summary="A host directory that looks like a project checkout is writable, so its .git hooks and config are too",
    check=check,
    doc=__doc__ or "",
)
