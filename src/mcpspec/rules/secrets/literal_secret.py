"""
## What it does
Flags a value that looks like a real credential (a GitHub, Slack, GitLab, npm,
OpenAI, Anthropic or Google API token, an AWS access key ID, a private key, a
JWT, or a URL with a password in it) written straight into the file: in
`env.set` (a server's or `defaults`'), in a server's `command`, in
`transport.url`, or as a secret's `ref`. The message names where it is and
what it looks like, never the value.

## Why is this risky
This file is meant to be committed and reviewed. A credential written in it
ends up in git history, in every clone and fork, in CI logs and in the
generated artifacts (Compose files, Kubernetes manifests, systemd units),
and it cannot be rotated or revoked by changing a reference. Values under
`env.set` are also visible to everything that can read the process's
environment. Name the credential under `secrets` and bind it instead.

## Example
```yaml
version: 1
project: demo
servers:
  issues:
    command: [mcp-issues]
    env:
      set:
        LOG_LEVEL: info
        GITHUB_TOKEN: ghp_0123456789abcdefghijABCDEFGHIJ012345
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  issues-ro:
    provider: env
    ref: ISSUES_TOKEN_RO
    description: Fine-grained, read-only token for the issues of one repository.
    scopes: [issues:read]
    ttl: 8h
servers:
  issues:
    command: [mcp-issues]
    env:
      set:
        LOG_LEVEL: info
    secrets:
      - {use: issues-ro, as: {env: GITHUB_TOKEN}}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure
- CWE-798 Use of Hard-coded Credentials, CWE-312 Cleartext Storage of Sensitive Information
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import looks_like_secret
from mcpspec.rules.secrets._common import shape
from mcpspec.spec.models import EnvPolicy, HttpTransport, Server


def _env_set(env: EnvPolicy | None, base: SpecPath, who: str) -> Iterator[Finding]:
    for key, value in ((env.set if env is not None else None) or {}).items():
        if looks_like_secret(value):
            yield Finding(path=(*base, "env", "set", key), message=f"{who} {key} to a literal value that looks like {shape(value)}")


def _command(name: str, server: Server) -> Iterator[Finding]:
    base: SpecPath = ("servers", name, "command")
    if isinstance(server.command, str):
        if looks_like_secret(server.command):
            yield Finding(path=base, message=f"server {name!r} has a literal value that looks like {shape(server.command)} in its shell command")
        return
    for index, arg in enumerate(server.command or []):
        if looks_like_secret(arg):
            yield Finding(path=(*base, index), message=f"server {name!r} has a literal value that looks like {shape(arg)} in command argument {index}")


def _url(name: str, server: Server) -> Iterator[Finding]:
    transport = server.transport
    if isinstance(transport, HttpTransport) and transport.url is not None and looks_like_secret(transport.url):
        message = f"server {name!r} has a literal value that looks like {shape(transport.url)} in its transport URL"
        yield Finding(path=("servers", name, "transport", "url"), message=message)


def check(plan: Plan) -> Iterator[Finding]:
    # The file, not the Plan: a literal is a leak where it is written, used or not.
    spec = plan.spec
    yield from _env_set(spec.defaults.env, ("defaults",), "defaults set")
    for name, server in spec.servers.items():
        yield from _env_set(server.env, ("servers", name), f"server {name!r} sets")
        yield from _command(name, server)
        yield from _url(name, server)
    for name, secret in spec.secrets.items():
        for at, _provider, ref in secret.every_source():
            if looks_like_secret(ref):
                message = f"secret {name!r} has a literal value that looks like {shape(ref)} as its ref, instead of naming where the value is"
                yield Finding(path=("secrets", name, *at, "ref"), message=message)


RULE = Rule(
    id="SE001",
    slug="literal-secret",
    severity="critical",
    summary="A credential is written literally in the spec",
    check=check,
    doc=__doc__ or "",
)
