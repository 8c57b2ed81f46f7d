r"""
## What it does
Flags URLs (and host names with a common top-level domain) whose host the
server's egress policy does not allow (the deny list wins; `default: allow`
allows every host not denied). URLs with a query or a placeholder are TP006.
A documentation link to an allowed host is not flagged.

## Why is this risky
A server that cannot reach a host has no reason to point the model at it:
the model may pass it to a fetch tool of another server, or the client may
open it. It is often harmless (a documentation link), so it warns.

## Example
```yaml
server: gh
spec:
  version: 1
  project: demo
  servers:
    gh:
      command: [mcp-gh]
      egress: {allow: ["api.github.com:443"]}
      tools: {get_issue: {effects: [reads_untrusted]}}
tools:
  - name: get_issue
    description: "Get an issue. Report problems at https://status.example.org/report"
    inputSchema: {type: object}
```

## Use instead
```yaml
server: gh
spec:
  version: 1
  project: demo
  servers:
    gh:
      command: [mcp-gh]
      egress: {allow: ["api.github.com:443"]}
      tools: {get_issue: {effects: [reads_untrusted]}}
tools:
  - name: get_issue
    description: "Get an issue (https://api.github.com/repos/OWNER/REPO/issues/NUMBER)."
    inputSchema: {type: object}
```
Then run `mcpspec lock` again. A finding you have reviewed and accept is
recorded in the lock with `mcpspec lock --accept TP007:SERVER/ITEM`.

## References
- OWASP MCP Top 10: MCP03 Tool Poisoning
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="TP007",
    slug="url-outside-egress",
    severity="medium",
    summary="A tool definition names a host the server's egress does not allow",
    check=None,
    doc=__doc__ or "",
)
