"""
## What it does
Flags a command argument that carries a credential: one that expands a
secret's variable (`$TOKEN`, `${GH_TOKEN}`, where the name is bound from a
secret or looks like a secret's), the value after a `--token`, `--password`,
`--api-key` or `--secret` style flag, an `Authorization:` (or API key)
header, or a URL with a password in it.

## Why is this risky
A process's arguments are not private: every user and process on the host
(or in the sandbox) can read them from `/proc/<pid>/cmdline` and `ps`, and
they end up in crash reports, audit logs, shell history and the generated
Compose or systemd files. A secret bound as an environment variable or, better,
a file is readable only by the process itself. Most MCP servers that take a
`--token` flag also read an environment variable or a token file.

## Example
```yaml
version: 1
project: demo
secrets:
  deploy-token:
    provider: vault
    ref: kv/deploy#token
    scopes: [deployments:write]
    ttl: 15m
servers:
  deployer:
    command: [deployer-mcp, --token, "${DEPLOY_TOKEN}"]
    secrets:
      - {use: deploy-token, as: {env: DEPLOY_TOKEN}}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  deploy-token:
    provider: vault
    ref: kv/deploy#token
    scopes: [deployments:write]
    ttl: 15m
servers:
  deployer:
    command: [deployer-mcp, --token-file, /run/secrets/deploy-token]
    secrets:
      - {use: deploy-token, as: {file: /run/secrets/deploy-token}}
```

## References
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure
- CWE-214 Invocation of Process Using Visible Sensitive Information, CWE-200 Exposure of Sensitive Information to an Unauthorized Actor
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping, Sequence

from mcpspec.ir.plan import EffectiveSandbox, Plan, SecretGrant
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.secrets._common import secret_looking_name

_EXPANSION = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_SECRET_FLAG = re.compile(r"^--?(?:[a-z0-9]+[-_])*(?:token|password|passwd|pass|apikey|api[-_]key|secret|access[-_]key|secret[-_]key)(?:=(?P<value>.*))?$", re.IGNORECASE)
_HEADER = re.compile(r"(^|[\s=:'\"])(proxy-authorization|authorization|x-api-key|api-key|x-auth-token|private-token)\s*:\s*\S", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)

Reason = tuple[str, tuple[Related, ...]]


def _expansion(granted: Mapping[str, SecretGrant], arg: str) -> Reason | None:
    """Why ``arg`` expands a secret's variable (``granted``: the server's secrets by their env name)."""
    for name in _EXPANSION.findall(arg):
        if name in granted:
            grant = granted[name]
            return f"expands ${name} (secret {grant.name!r})", (Related(grant.path, f"secret {grant.name!r} is bound to {name} here"),)
        if secret_looking_name(name):
            return f"expands ${name}, a secret-looking variable", ()
    return None


def _reasons(server: EffectiveSandbox, args: Sequence[str]) -> dict[int, Reason]:
    """Argument index -> why it carries a secret (the first reason found)."""
    found: dict[int, Reason] = {}
    granted: dict[str, SecretGrant] | None = None
    for index, arg in enumerate(args):
        # Each pattern needs a character most arguments lack: a flag starts with '-', an
        # expansion holds '$', a header ':' and a URL '://'; test it before the regex.
        flag = _SECRET_FLAG.match(arg) if arg.startswith("-") else None
        if flag is not None:
            option = arg.split("=", 1)[0]
            if flag.group("value"):
                found.setdefault(index, (f"passes a value for {option}", ()))
            elif index + 1 < len(args) and not args[index + 1].startswith("-"):
                found.setdefault(index + 1, (f"passes a value for {option}", ()))
        reason = None
        if "$" in arg:
            if granted is None:
                granted = {grant.env: grant for grant in server.secrets if grant.env is not None}
            reason = _expansion(granted, arg)
        if reason is None and ":" in arg:
            reason = _literal_reason(arg)
        if reason is not None:
            found.setdefault(index, reason)
    return found


def _literal_reason(arg: str) -> Reason | None:
    """Why an argument holding ':' carries a credential itself: a header or a URL with a password."""
    if _HEADER.search(arg):
        return "passes a credential header", ()
    if "://" in arg and _URL_PASSWORD.search(arg):
        return "passes a URL with a password", ()
    return None


def _shell_words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def check(plan: Plan) -> Iterator[Finding]:
    for server in launched(plan):
        if server.command_is_shell:
            reasons = _reasons(server, _shell_words(server.command[-1]))
            if reasons:
                what, related = reasons[min(reasons)]
                message = f"server {server.name!r} {what} in its shell command, readable in /proc/<pid>/cmdline"
                yield Finding(path=(*server.path, "command"), message=message, related=related)
            continue
        for index, (what, related) in sorted(_reasons(server, server.command).items()):
            message = f"server {server.name!r} {what} in command argument {index}, readable in /proc/<pid>/cmdline"
            yield Finding(path=(*server.path, "command", index), message=message, related=related)


RULE = Rule(
    id="SE002",
    slug="secret-in-argv",
    severity="high",
    summary="A credential is passed on a server's command line",
    check=check,
    doc=__doc__ or "",
)
