"""
## What it does
Flags a secret in use whose `scopes` declare broad power:

- GitHub classic token scopes that reach far beyond one task: `repo` (full
  control of every private repository the account can reach), `admin:org`,
  `write:org`, `admin:repo_hook`, `admin:org_hook`, `admin:public_key`,
  `admin:enterprise`, `delete_repo`, `write:packages`, `delete:packages`,
  `workflow`, `user`, `site_admin`; GitLab's `api` and `sudo`;
- a database superuser, as a user name (`user:postgres`, `role=root`) or in
  a database URL (`postgresql://postgres@db.internal/app`): `postgres`,
  `root`, `sa`, `admin`, `superuser`, `rds_superuser`, `cloudsqlsuperuser`,
  `azure_pg_admin`; or the scope `superuser` or `ALL PRIVILEGES`;
- cloud wildcards and administrator roles: `*`, `*:*`, `s3:*` (any action),
  `AdministratorAccess`, `roles/owner`, `roles/editor`, `Owner`,
  `https://www.googleapis.com/auth/cloud-platform`, and any `<thing>:owner`
  or `<thing>:admin` role (`db:owner`).

## Why is this risky
A server holds its credential for as long as it runs, and whatever steers
the server (a prompt injection, a poisoned tool description, a bug) can use
every power the credential carries, not just the one the server needs. A
classic `repo` token given to a server that reads one repository's issues
can push to, or delete branches of, every private repository of the
account; a `postgres` login can drop any database and read every table; an
`AdministratorAccess` key owns the cloud account. The scope declared in the
spec is what reviewers approve: it should be the least the server needs.

## Example
```yaml
version: 1
project: demo
secrets:
  gh: {provider: env, ref: GITHUB_TOKEN, scopes: [repo], ttl: 8h}
servers:
  github:
    command: [github-mcp-server, stdio]
    secrets:
      - {use: gh, as: {env: GITHUB_PERSONAL_ACCESS_TOKEN}}
```

## Use instead
A fine-grained token limited to the repositories and permissions the server
needs (a read-only database role, a cloud role with named actions):
```yaml
version: 1
project: demo
secrets:
  gh: {provider: env, ref: GITHUB_TOKEN_RO, scopes: ["contents:read", "issues:read"], ttl: 8h}
servers:
  github:
    command: [github-mcp-server, stdio]
    secrets:
      - {use: gh, as: {env: GITHUB_PERSONAL_ACCESS_TOKEN}}
```

## References
- GitHub Docs: Scopes for OAuth apps; Managing your personal access tokens (fine-grained tokens)
- PostgreSQL documentation: Role Attributes (superuser bypasses every permission check)
- MCP specification, Security Best Practices: Scope Minimization
- OWASP MCP Top 10: MCP02 Privilege Escalation via Scope Creep; CWE-272 Least Privilege Violation
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.secrets._common import in_use, users, uses

GITHUB_BROAD = {
    "repo": "a GitHub classic scope with full control of every private repository the account can reach",
    "admin:org": "a GitHub classic scope with full control of the organization",
    "write:org": "a GitHub classic scope that changes organization membership and teams",
    "admin:repo_hook": "a GitHub classic scope over every repository's webhooks",
    "admin:org_hook": "a GitHub classic scope over the organization's webhooks",
    "admin:public_key": "a GitHub classic scope over the account's SSH keys",
    "admin:enterprise": "a GitHub classic scope with full control of the enterprise",
    "delete_repo": "a GitHub classic scope that deletes repositories",
    "write:packages": "a GitHub classic scope that publishes packages",
    "delete:packages": "a GitHub classic scope that deletes packages",
    "workflow": "a GitHub classic scope that rewrites CI workflows (and so runs code with the repository's secrets)",
    "user": "a GitHub classic scope that changes the account's profile and e-mail",
    "site_admin": "a GitHub Enterprise site administrator scope",
    "api": "a GitLab scope with full read and write access to the API",
    "sudo": "a GitLab scope that acts as any user",
}
SUPERUSERS = frozenset({"postgres", "root", "sa", "admin", "administrator", "superuser", "rds_superuser", "cloudsqlsuperuser", "azure_pg_admin", "dbo", "system", "sys"})
SUPER_SCOPES = frozenset({"superuser", "all privileges", "all", "dba", "db_owner"})
CLOUD_ADMIN = frozenset({
    "administratoraccess", "arn:aws:iam::aws:policy/administratoraccess", "roles/owner", "roles/editor", "owner",
    "https://www.googleapis.com/auth/cloud-platform", "poweruseraccess", "arn:aws:iam::aws:policy/poweruseraccess",
})
_USER_SCOPE = re.compile(r"^(?:user|username|role|login|db_user|db-user)\s*[:=]\s*(?P<name>[^\s]+)$", re.IGNORECASE)


def broad(scope: str) -> str:
    """Why a declared scope is broad ('' when it is not). Never repeats a URL's password."""
    text = scope.strip()
    low = text.lower()
    if low in GITHUB_BROAD:
        return f"'{text}', {GITHUB_BROAD[low]}"
    if "://" in text:
        try:
            user = urlsplit(text).username
        except ValueError:
            return ""
        if user is not None and user.lower() in SUPERUSERS:
            return f"a database URL whose user '{user}' is a superuser, with every permission on every database"
        return ""
    match = _USER_SCOPE.match(text)
    if match is not None and match.group("name").lower() in SUPERUSERS:
        return f"'{text}', a superuser login with every permission on every database"
    if low in SUPER_SCOPES:
        return f"'{text}', superuser power over the database"
    if low in CLOUD_ADMIN:
        return f"'{text}', an administrator role over the whole cloud account or project"
    if low.endswith((":owner", ":admin", "/owner", "/admin")):
        return f"'{text}', an owner or administrator role"
    if text == "*" or text.endswith(":*") or text.startswith("*:"):
        return f"'{text}', a wildcard that grants every action"
    return ""


def check(plan: Plan) -> Iterator[Finding]:
    for name, secret, bound in in_use(plan):
        scopes = secret.scopes if isinstance(secret.scopes, list) else []
        for index, scope in enumerate(scopes):
            why = broad(scope)
            if why:
                yield Finding(
                    path=("secrets", name, "scopes", index),
                    message=f"secret {name!r} declares {why} (used by {users(bound)}): give it the least the server needs",
                    related=uses(bound),
                )


RULE = Rule(
    id="SE009",
    slug="broad-secret-scope",
    severity="high",
    summary="A secret declares a broad scope: a GitHub classic repo/admin scope, a database superuser, a cloud wildcard or admin role",
    check=check,
    doc=__doc__ or "",
)
