"""
## What it does
Flags a mount of a browser profile: Chrome, Chromium, Brave, Edge, Firefox or
Safari data (`~/.config/google-chrome`, `~/.mozilla`,
`~/Library/Application Support/Google/Chrome`, ...), Playwright's persistent
profiles (`~/.cache/ms-playwright`), a directory that holds one (`~/.config`),
or any path with a `Cookies` component.

## Why is this risky
A browser profile holds the live session cookies and saved passwords of
every site its owner is logged in to. A browser server driven by a model
that reads untrusted pages can be steered to act as the user on any of them,
and a server that reads the files can send the cookies away: account
takeover without a password or a second factor. Give a browser server a
fresh, empty profile per run and, when it must be logged in, the session of
a dedicated test account.

## Example
```yaml
version: 1
project: demo
servers:
  browser:
    kind: browser
    command: [npx, -y, "@playwright/mcp@0.0.41", --user-data-dir, /profile]
    mounts:
      - {from: ~/.config/google-chrome, to: /profile, mode: rw}
```

## Use instead
```yaml
version: 1
project: demo
workspace:
  root: /srv/mcp/workspaces
  dirs:
    profile: {mode: rw, tmpfs: true, size: 512Mi}
servers:
  browser:
    kind: browser
    command: [npx, -y, "@playwright/mcp@0.0.41", --user-data-dir, /profile]
    mounts:
      - {from: workspace.profile, to: /profile}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP06 Prompt Injection via Contextual Payloads
- CWE-539 Use of Persistent Cookies Containing Sensitive Information, CWE-522 Insufficiently Protected Credentials
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import BROWSER_PROFILE_PATHS, components, overlapping
from mcpspec.rules.filesystem._common import launched_host_mounts
from mcpspec.rules.grouping import listing


def check(plan: Plan) -> Iterator[Finding]:
    for server, mount in launched_host_mounts(plan):
        found = overlapping(mount.location, BROWSER_PROFILE_PATHS)
        if "Cookies" in components(mount.location) or any(within for _, within in found):
            message = f"server {server.name!r} mounts {mount.location}, a browser profile with live session cookies"
        elif found:
            message = f"server {server.name!r} mounts {mount.location}, which holds browser profiles {listing([pattern for pattern, _ in found])}"
        else:
            continue
        yield Finding(path=(*mount.path, "from"), message=message)


RULE = Rule(
    id="FS007",
    slug="browser-profile-mounted",
    severity="high",
    summary="A browser profile (cookies, saved passwords) is mounted into a sandbox",
    check=check,
    doc=__doc__ or "",
)
