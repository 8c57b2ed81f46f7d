r"""
## What it does
Compares a tool's `annotations` with the `effects` the spec declares for it:
`readOnlyHint: true` on a tool that writes, runs, sends, deploys, destroys,
changes access, pays or exports (`writes_local`, `exec`, `external_send`,
`deploy`, `destructive`, `modify_access`, `financial`, `exports_data`);
`destructiveHint: false` on a `destructive` tool; `openWorldHint: false` on a
tool that reads untrusted content, sends or exports.

## Why is this risky
Clients trust annotations: some run read-only tools without asking, and show
destructive ones with a warning. A server that marks a deleting tool read-only
gets it run unasked. The spec's effects are what was reviewed, so a
contradiction means the server (or the spec) is wrong.

## Example
```yaml
server: files
spec:
  version: 1
  project: demo
  servers:
    files: {command: [mcp-files], tools: {delete_file: {effects: [destructive]}}}
tools:
  - name: delete_file
    description: "Delete a file."
    inputSchema: {type: object}
    annotations: {readOnlyHint: true, destructiveHint: false}
```

## Use instead
```yaml
server: files
spec:
  version: 1
  project: demo
  servers:
    files: {command: [mcp-files], tools: {delete_file: {effects: [destructive]}}}
tools:
  - name: delete_file
    description: "Delete a file."
    inputSchema: {type: object}
    annotations: {readOnlyHint: false, destructiveHint: true}
```
Then run `mcpspec lock` again. A finding you have reviewed and accept is
recorded in the lock with `mcpspec lock --accept TP010:SERVER/ITEM`.

## References
- MCP specification 2025-06-18, Tools: tool annotations (hints, not guarantees)
- mcpspec spec, `tools.<name>.effects`
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="TP010",
    slug="annotation-contradicts-effects",
    severity="high",
    summary="A tool's annotations contradict the effects the spec declares for it",
    check=None,
    doc=__doc__ or "",
)
