"""
## What it does
Flags a read-write mount of a git directory (a path that is `.git` or lies
inside one) or of an environment file (`.env`, `.env.<name>`, `.envrc`).

## Why is this risky
Git runs code from its own directory: hooks (`.git/hooks/pre-commit`),
`core.fsmonitor`, `core.sshCommand` and filters in `.git/config` all execute
on the host the next time someone runs git there. Writable refs can also
smuggle option-like names (`--upload-pack=...`) into a git server's
arguments. `.env` files hold secrets, and `.envrc` is shell code that direnv
runs on `cd`: writing one is code execution on the developer's machine.

## Example
```yaml
version: 1
project: demo
servers:
  git:
    command: [mcp-server-git, --repository, /repo]
    mounts:
      - {from: ~/projects/app/src, to: /repo/src, mode: rw}
      - {from: ~/projects/app/.git, to: /repo/.git, mode: rw}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  git:
    command: [mcp-server-git, --repository, /repo]
    mounts:
      - {from: ~/projects/app/src, to: /repo/src, mode: rw}
      - {from: ~/projects/app/.git, to: /repo/.git, mode: ro}
```

## References
- OWASP MCP Top 10: MCP05 Command Injection & Execution, MCP01 Token Mismanagement & Secret Exposure
- mcp-server-git CVE-2025-68143, CVE-2025-68144, CVE-2025-68145 (argument injection, git_init at arbitrary paths)
- CWE-94 Improper Control of Generation of Code, CWE-538 Insertion of Sensitive Information into Externally-Accessible File or Directory
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import components
from mcpspec.rules.filesystem._common import launched_host_mounts, mode_path

_ENV_FILE = re.compile(r"^\.env(\..+)?$|^\.envrc$")


def _what(source: str) -> str | None:
    parts = components(source)
    if ".git" in parts:
        return "a git directory, whose hooks and config run code" if parts[-1] == ".git" else "part of a git directory, whose hooks and config run code"
    if _ENV_FILE.match(parts[-1]):
        return "a direnv file, shell code run on cd" if parts[-1] == ".envrc" else "an environment file holding secrets"
    return None


def flagged(source: str) -> bool:
    """Whether this rule flags a writable mount of ``source``."""
    return _what(source) is not None


def check(plan: Plan) -> Iterator[Finding]:
    for server, mount in launched_host_mounts(plan):
        what = _what(mount.location) if mount.writable else None
        if what is not None:
            yield Finding(path=mode_path(plan, mount), message=f"server {server.name!r} can write {mount.location}, {what}")


RULE = Rule(
    id="FS006",
    slug="vcs-or-env-writable",
    severity="high",
    summary="A git directory or an environment file is writable from a sandbox",
    check=check,
    doc=__doc__ or "",
)
