"""
## What it does
Flags a server that inherits the host's whole environment (`env.inherit:
all`), or an inherit list that names a secret-looking variable (one with a
word such as KEY, SECRET, TOKEN, PASSWORD, PASS, CREDENTIAL, AUTH or DSN in
its name, or DATABASE_URL: `GITHUB_TOKEN`, `SSH_AUTH_SOCK`; not
`GIT_AUTHOR_NAME`). A setting in
`defaults` is reported once, at its line there, naming the servers it
reaches.

## Why is this risky
A developer's or CI runner's environment is full of credentials: cloud keys,
registry tokens, the SSH agent socket, API keys exported in a shell profile.
Inheriting all of it hands every one of them to a server that needs none,
where one injected instruction can print them into a tool result. The MCP
SDKs' stdio clients pass only a minimal allowlist (HOME, PATH, ...) by
default for this reason. Credentials a server does need belong under
`secrets`, where each is named, scoped and bound to one server.

## Example
```yaml
version: 1
project: demo
defaults:
  env: {inherit: all}
servers:
  fetch:
    command: [mcp-server-fetch]
```

## Use instead
```yaml
version: 1
project: demo
defaults:
  env: {inherit: minimal}
servers:
  fetch:
    command: [mcp-server-fetch]
```

## References
- MCP SDKs: stdio client default environment (getDefaultEnvironment)
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure
- CWE-526 Cleartext Storage of Sensitive Information in an Environment Variable, CWE-200 Exposure of Sensitive Information to an Unauthorized Actor
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import Plan
from mcpspec.rules.base import Finding, Rule
from mcpspec.rules.facts import launched
from mcpspec.rules.grouping import by_origin, grouped
from mcpspec.rules.secrets._common import inherited_names, secret_looking_name, whose


def check(plan: Plan) -> Iterator[Finding]:
    everything = by_origin((server for server in launched(plan) if server.env.inherit == "all"), "env.inherit")
    for path, group in everything.items():
        yield Finding(path=path, message=f"env.inherit: all passes every host variable, tokens and keys included, to {whose(path, group)}")
    secret_looking = grouped(((path, name), server) for path, name, server in inherited_names(plan) if secret_looking_name(name))
    for (path, name), group in secret_looking.items():
        yield Finding(path=path, message=f"env.inherit passes {name}, a secret-looking host variable, to {whose(path, group)}")


RULE = Rule(
    id="SE003",
    slug="environment-inherited",
    severity="medium",
    summary="A server inherits the host's whole environment or its secret variables",
    check=check,
    doc=__doc__ or "",
)
