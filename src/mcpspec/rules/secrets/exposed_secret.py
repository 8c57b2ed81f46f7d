"""
## What it does
Flags a secret marked `exposed`: a value of it was seen in plain text, such as the literal token
`mcpspec import` found in a client config (IM001) and left out of the spec. The finding stays until
someone rotates the credential and deletes the `exposed` key.

## Why is this risky
A token that sat in a config file has been wherever that file went: backups, dotfile repositories,
screenshots, support bundles, other programs that read the file, and now the history of the
machine it was on. Moving it into an environment variable hides it from the spec but does not
make the old value secret again; only a new value does. The marker keeps that to-do in the spec,
where lint, the build and the review report see it, rather than in one import's terminal output.

## Example
```yaml
version: 1
project: demo
secrets:
  github-token:
    provider: env
    ref: GITHUB_PERSONAL_ACCESS_TOKEN
    exposed: claude_desktop_config.json:10
servers:
  github:
    command: [mcp-server-github]
    secrets:
      - {use: github-token, as: {env: GITHUB_PERSONAL_ACCESS_TOKEN}}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  github-token:
    # rotated on 2026-06-01: a new fine-grained token, the old one revoked
    provider: env
    ref: GITHUB_PERSONAL_ACCESS_TOKEN
servers:
  github:
    command: [mcp-server-github]
    secrets:
      - {use: github-token, as: {env: GITHUB_PERSONAL_ACCESS_TOKEN}}
```

## References
- OWASP Secrets Management Cheat Sheet: rotation and revocation after exposure
- CWE-798: Use of Hard-coded Credentials; CWE-312: Cleartext Storage of Sensitive Information
- GitHub documentation, "Keeping your personal access tokens secure" (revoke a token that may have leaked)
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule


def check(plan: Plan) -> Iterator[Finding]:
    for name, secret in plan.spec.secrets.items():
        if secret.exposed is not None:
            yield Finding(
                path=("secrets", name, "exposed"),
                message=f"secret {name!r} was seen in plain text ({secret.exposed}): rotate it (issue a new value, revoke the old one), then delete 'exposed'",
            )


RULE = Rule(
    id="SE010",
    slug="exposed-secret",
    severity="critical",
    summary="A secret whose value was seen in plain text has not been rotated",
    check=check,
    doc=__doc__ or "",
)
