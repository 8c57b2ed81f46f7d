r"""
## What it does
Flags a name (a tool's or prompt's name, a prompt argument's name, a key
under an input or output schema's `properties`) that mixes Latin letters with
letters of a script drawn like them (Cyrillic, Greek, Armenian, Cherokee...),
or holds characters that NFKC normalisation changes (fullwidth or
mathematical letters).

## Why is this risky
A name that looks like `read_file` but spells `reаd_file` with a Cyrillic `а`
passes a review by eye, defeats allowlists and approvals that compare names,
and lets a server impersonate another's tool. MCP asks tool names to be ASCII
letters, digits, `_`, `-` and `.`.

## Example
```yaml
server: files
tools:
  - name: "re\u0430d_file"
    description: "Read a file."
    inputSchema: {type: object}
```

## Use instead
```yaml
server: files
tools:
  - name: read_file
    description: "Read a file."
    inputSchema: {type: object}
```
Then run `mcpspec lock` again. A finding you have reviewed and accept is
recorded in the lock with `mcpspec lock --accept TP002:SERVER/ITEM`.

## References
- Unicode Technical Standard #39: mixed-script and whole-script confusables
- MCP specification 2025-11-25, Tools: tool names
"""

from __future__ import annotations

from mcpspec.rules.base import Rule

RULE = Rule(
    id="TP002",
    slug="confusable-name",
    severity="high",
    summary="A tool, prompt, argument or property name mixes scripts or uses look-alike characters",
    check=None,
    doc=__doc__ or "",
)
