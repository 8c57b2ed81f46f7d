"""
## What it does
Flags a mount whose host path is a credential location (`~/.ssh`, `~/.aws`,
`~/.kube`, `~/.docker/config.json`, `~/.netrc`, a Kubernetes service account
token, ...), lies inside one, or holds one (a mount of `~` or `/home` holds
`~/.ssh`).

## Why is this risky
Anything the server can read, a prompt-injected model can ask it to read and
send elsewhere: the canonical tool-poisoning proof of concept reads
`~/.ssh/id_rsa` and `~/.cursor/mcp.json` through an innocent-looking tool.
A mounted credential directory turns one injected instruction into stolen SSH
keys, cloud keys or registry tokens, usable long after the session ends.
Workspace dirs are never credential paths and are not reported.

## Example
```yaml
version: 1
project: demo
servers:
  git:
    command: [mcp-server-git]
    mounts:
      - {from: ~/projects/app, to: /repo}
      - {from: ~/.ssh, to: /home/app/.ssh}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  deploy-key:
    provider: file
    ref: /etc/mcp/keys/app-deploy-key
    description: Read-only deploy key of the app repository.
    scopes: [repo:app:read]
servers:
  git:
    command: [mcp-server-git]
    mounts:
      - {from: ~/projects/app, to: /repo}
    secrets:
      - {use: deploy-key, as: {file: /run/secrets/deploy-key}}
```

## References
- MCP specification, Security Best Practices: "Local MCP Server Compromise" (sandbox servers, restrict file access)
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure, MCP10 Context Injection & Over-Sharing
- CWE-522 Insufficiently Protected Credentials, CWE-552 Files or Directories Accessible to External Parties
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import CREDENTIAL_PATHS, overlapping
from mcpspec.rules.filesystem._common import launched_host_mounts
from mcpspec.rules.grouping import listing

# What the best-known credential paths hold, for messages; others are "credentials".
_HOLDS = {
    "~/.ssh": "SSH keys", "~/.gnupg": "GPG keys", "~/.aws": "AWS credentials", "~/.config/gcloud": "Google Cloud credentials",
    "~/.azure": "Azure credentials", "~/.kube": "Kubernetes credentials", "/etc/kubernetes": "Kubernetes admin credentials",
    "/var/run/secrets/kubernetes.io": "a Kubernetes service account token", "/run/secrets/kubernetes.io": "a Kubernetes service account token",
    "~/.docker/config.json": "container registry credentials", "~/.npmrc": "an npm token", "~/.pypirc": "a PyPI token",
    "~/.netrc": "HTTP passwords", "~/.git-credentials": "git passwords", "~/.config/gh": "a GitHub CLI token",
    "~/.vault-token": "a Vault token", "~/.pgpass": "database passwords", "/etc/shadow": "password hashes", "/root": "root's home, keys included",
}


def check(plan: Plan) -> Iterator[Finding]:
    for server, mount in launched_host_mounts(plan):
        found = overlapping(mount.location, CREDENTIAL_PATHS)
        if not found:
            continue
        inside = [pattern for pattern, within in found if within]
        if inside:
            # The innermost credential path that holds the mount names what leaks.
            pattern = max(inside, key=len)
            where = "," if pattern == mount.location else f", inside {pattern},"
            what = _HOLDS.get(pattern, "credentials")
            message = f"server {server.name!r} mounts {mount.location}{where} which holds {what}"
        else:
            held = [pattern for pattern, _ in found]
            noun = "credential path" if len(held) == 1 else "credential paths"
            message = f"server {server.name!r} mounts {mount.location}, which holds {noun} {listing(held)}"
        yield Finding(path=(*mount.path, "from"), message=message)


RULE = Rule(
    id="FS001",
    slug="credential-path-mounted",
    severity="critical",
    summary="A credential directory or file is mounted into a sandbox",
    check=check,
    doc=__doc__ or "",
)
