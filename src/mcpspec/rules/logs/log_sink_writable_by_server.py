"""
## What it does
Flags a server whose audit log file (`logging.sink`) lies inside a host
directory that it or any other launched server mounts read-write, including a
workspace directory whose per-run path can hold the sink.

## Why is this risky
An audit trail is only evidence if the party it records cannot change it. When
the sink sits inside a writable mount, the logged server (or an attacker who
took it over through prompt injection or a malicious dependency) can truncate
the file, delete the lines that show what it did, or append forged ones, and
the tampering looks like ordinary writes inside its own workspace. Worse, the
launcher appends to the sink with the rights it runs with, often root: a
server that replaces the file with a symbolic link turns the next audit line
into a write to any file of the host (`/etc/passwd`, a root shell profile).
Keep audit files where only the launcher writes them, outside every mount.
The build stops on this finding unless it is waived.

## Example
```yaml
version: 1
project: demo
defaults:
  logging:
    sink: /srv/agent/logs/audit.jsonl
servers:
  files:
    command: [mcp-server-filesystem, /data]
    mounts:
      - {from: /srv/agent, to: /data, mode: rw}
    tools:
      write_file: {effects: [writes_local]}
```

## Use instead
```yaml
version: 1
project: demo
defaults:
  logging:
    sink: /var/log/mcp/demo/audit.jsonl
servers:
  files:
    command: [mcp-server-filesystem, /data]
    mounts:
      - {from: /srv/agent/data, to: /data, mode: rw}
    tools:
      write_file: {effects: [writes_local]}
```

## References
- OWASP MCP Top 10: MCP08 Lack of Audit and Telemetry
- CWE-117: Improper Output Neutralization for Logs (forged entries)
- CWE-284: Improper Access Control
- NIST SP 800-53 AU-9: Protection of Audit Information
- CWE-59: Improper Link Resolution Before File Access ('Link Following')
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import by_origin, commas, named, who


def sink_file(server: EffectiveSandbox) -> str | None:
    """The audit sink as a normalized host path, or None for stderr and journal."""
    file = server.logging.sink.path
    return None if file is None else str(file)


Writer = facts.Writer


def writers(server: EffectiveSandbox, writable: facts.WritableIndex) -> list[Writer]:
    """The read-write mounts, of any server, that hold this server's sink file."""
    sink = sink_file(server)
    return [] if sink is None else writable.holding(sink)


def through(found: list[Writer]) -> str:
    """``server 'a' through its rw mount of /srv``, ``servers 'a', 'b' through their rw mounts``."""
    names = list(dict.fromkeys(server.name for server, _ in found))
    whom = named("server", names, commas)
    if len(found) == 1:
        return f"{whom} through its rw mount of {facts.shown(found[0][1])}"
    return f"{whom} through {'its' if len(names) == 1 else 'their'} rw mounts"


def check(plan: Plan) -> Iterator[Finding]:
    writable = facts.writable_index(plan)
    exposed = [server for server in facts.launched(plan) if writers(server, writable)]
    for path, group in by_origin(exposed, "logging.sink").items():
        sink = sink_file(group[0])
        found: list[Writer] = []
        for writer in (writer for server in group for writer in writers(server, writable)):
            if not any(writer[0] is a and writer[1] is b for a, b in found):
                found.append(writer)
        related = tuple(Related(mount.path, f"server '{server.name}' mounts {facts.shown(mount)} read-write here") for server, mount in found)
        owner = "" if {s.name for s, _ in found} <= {s.name for s in group} else f" of {who(group, commas)}"
        yield Finding(path=path, message=f"audit log {sink}{owner} is writable by {through(found)}", related=related)


RULE = Rule(
    id="LG005",
    slug="log-sink-writable-by-server",
    severity="high",
    summary="A server can rewrite an audit log, or redirect the launcher's writes to it, through a writable mount",
    check=check,
    doc=__doc__ or "",
)
