"""
## What it does
Flags a server whose audit log file (`logging.sink`) lies inside a host
directory the same server mounts read-write, including a workspace directory
whose per-run path can hold the sink.

## Why is this risky
An audit trail is only evidence if the party it records cannot change it. When
the sink sits inside a writable mount, the logged server (or an attacker who
took it over through prompt injection or a malicious dependency) can truncate
the file, delete the lines that show what it did, or append forged ones, and
the tampering looks like ordinary writes inside its own workspace. Keep audit
files where only the launcher writes them, outside every mount.

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
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpspec.ir.plan import AGENT_TOKEN, RUN_TOKEN, EffectiveMount, EffectiveSandbox, Plan
from mcpspec.rules import facts
from mcpspec.rules.base import Finding, Related, Rule
from mcpspec.rules.grouping import by_origin, commas, who
from mcpspec.spec.values import normalize_host_path

TEMPLATE_TOKENS = (AGENT_TOKEN, RUN_TOKEN)


def sink_file(server: EffectiveSandbox) -> str | None:
    """The audit sink as a normalized host path, or None for stderr and journal."""
    sink = server.logging.sink or "stderr"
    return None if sink in ("stderr", "journal") else normalize_host_path(sink)


def source_contains(source: str, path: str) -> bool:
    """Like facts.contains, with ``{agent}`` and ``{run_id}`` components matching any name."""
    if not any(token in source for token in TEMPLATE_TOKENS):
        return facts.contains(source, path)
    outer, inner = facts.components(source), facts.components(path)
    return len(outer) <= len(inner) and all(a in TEMPLATE_TOKENS or a == b for a, b in zip(outer, inner, strict=False))


def writable_mounts_holding_sink(server: EffectiveSandbox) -> list[EffectiveMount]:
    sink = sink_file(server)
    if sink is None:
        return []
    # A tmpfs directory is fresh memory, not the host directory: the sink file is not inside it.
    return [m for m in server.mounts if m.writable and not m.tmpfs and source_contains(m.source, sink)]


def shown(mount: EffectiveMount) -> str:
    return f"workspace.{mount.workspace_dir}" if mount.workspace_dir else mount.source


def through(group: list[EffectiveSandbox], mounts: list[EffectiveMount]) -> str:
    if len(group) > 1:
        return "their rw mounts"
    return f"its rw mount of {shown(mounts[0])}" if len(mounts) == 1 else "its rw mounts"


def check(plan: Plan) -> Iterator[Finding]:
    exposed = filter(writable_mounts_holding_sink, facts.launched(plan))
    for path, group in by_origin(exposed, "logging.sink").items():
        sink = sink_file(group[0])
        mounts = [(server, mount) for server in group for mount in writable_mounts_holding_sink(server)]
        how = through(group, [mount for _, mount in mounts])
        related = tuple(Related(mount.path, f"server '{server.name}' mounts {shown(mount)} read-write here") for server, mount in mounts)
        yield Finding(path=path, message=f"audit log {sink} is writable by {who(group, commas)} through {how}", related=related)


RULE = Rule(
    id="LG005",
    slug="log-sink-writable-by-server",
    severity="medium",
    summary="A server can rewrite its own audit log through a writable mount",
    check=check,
    doc=__doc__ or "",
)
