"""
## What it does
Flags a secret read from a file (provider `file`) that a launched server uses,
when its source lies inside a host directory that any launched server mounts
read-write (a workspace directory included), or is itself a directory above
such a mount.

## Why is this risky
The launcher reads a file secret on the host, with its own rights (often
root), each time a server starts. A server that can write where the secret
lives can replace the file, or swap it for a symbolic link to any host file
(`/etc/shadow`, another service's key): the next run hands that file to the
server as its "secret". It can also read the real secret straight from its
mount, whatever the secret's binding says. Keep secret sources in a directory
no sandbox mounts read-write, readable only by the account that launches.
The build stops on this finding unless it is waived.

## Example
```yaml
version: 1
project: demo
secrets:
  api-token:
    provider: file
    ref: /srv/app/config/token
servers:
  api:
    command: [mcp-api]
    secrets:
      - {use: api-token, as: {file: /run/secrets/token}}
  editor:
    command: [mcp-server-filesystem, /app]
    mounts:
      - {from: /srv/app, to: /app, mode: rw}
    tools:
      write_file: {effects: [writes_local]}
```

## Use instead
```yaml
version: 1
project: demo
secrets:
  api-token:
    provider: file
    ref: /etc/mcp/demo/api-token
servers:
  api:
    command: [mcp-api]
    secrets:
      - {use: api-token, as: {file: /run/secrets/token}}
  editor:
    command: [mcp-server-filesystem, /app]
    mounts:
      - {from: /srv/app/src, to: /app, mode: rw}
    tools:
      write_file: {effects: [writes_local]}
```

## References
- CWE-59: Improper Link Resolution Before File Access ('Link Following')
- CWE-367: Time-of-check Time-of-use (TOCTOU) Race Condition
- CWE-522: Insufficiently Protected Credentials
- OWASP MCP Top 10: MCP01 Token Mismanagement & Secret Exposure
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.diagnostics import SpecPath
from mcpspec.ir.plan import Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import commas, named
from mcpspec.rules.secrets._common import in_use
from mcpspec.spec.values import normalize_host_path


def check(plan: Plan) -> Iterator[Finding]:
    writable = facts.writable_index(plan)
    for name, secret, bound in in_use(plan):
        if not any(server.runs_here for server, _ in bound):
            continue
        for at, provider, ref in secret.every_source():  # each target's file source
            if provider == "file":
                yield from _writable(writable, name, ("secrets", name, *at, "ref"), ref)


def _writable(writable: facts.WritableIndex, name: str, path: SpecPath, ref: str) -> Iterator[Finding]:
    source = normalize_host_path(ref)
    found = sorted({id(w[1]): w for w in [*writable.holding(source), *writable.under(source)]}.values(), key=lambda w: writable.order[id(w[1])])
    if not found:
        return
    writers = named("server", dict.fromkeys(server.name for server, _ in found), commas)
    where = ", ".join(dict.fromkeys(facts.shown(mount) for _, mount in found))
    related = tuple(Related(mount.path, f"server '{server.name}' mounts {facts.shown(mount)} read-write here") for server, mount in found)
    inside = all(facts.source_contains(mount.location, source) for _, mount in found)
    message = (
        f"file secret {name!r} ({ref}) {'lies in' if inside else 'overlaps'} {where}, which {writers} can write: "
        "a planted file or link becomes the next run's secret"
    )
    yield Finding(path=path, message=message, related=related)


RULE = Rule(
    id="SE008",
    slug="secret-source-writable",
    severity="high",
    summary="A file secret's source lies inside a directory a server can write",
    check=check,
    doc=__doc__ or "",
)
