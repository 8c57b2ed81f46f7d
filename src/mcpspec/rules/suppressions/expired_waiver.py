"""
## What it does
Reports a `waivers:` entry whose `expires` date has passed. An expired waiver
no longer suppresses anything: the findings it covered are reported again.

## Why is this risky
Waivers accept a risk for a while, until a fix lands. A waiver past its date
is a decision nobody has renewed; failing on it makes the owner either fix the
risk or accept it again, consciously, with a new date.

## Example
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      - {from: /srv/data, to: /data, mode: rw}
    tools:
      read: {effects: [reads_private]}
waivers:
  - {rule: FS004, at: "servers.files.mounts[0]", reason: "migration", expires: 2020-01-01}
```

## Use instead
```yaml
version: 1
project: demo
servers:
  files:
    command: [mcp-files]
    mounts:
      - {from: /srv/data, to: /data, mode: ro}
    tools:
      read: {effects: [reads_private]}
```

## References
- conftest exceptions and checkov baselines (accepted risks stay visible).
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="SU004",
    slug="expired-waiver",
    severity="medium",
    summary="A waiver is past its expiry date",
    check=None,
    doc=__doc__ or "",
)
