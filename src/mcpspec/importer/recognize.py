"""Tell a user who lints (or builds) an MCP client's config that it is one, and what to run instead.

A file that does not load as a spec but reads as a client config (``mcpspec import --from auto``
finds MCP servers in it, and it has neither a spec's ``project`` nor its ``version: 1``) gets one
error, SC007, at its first server, in place of the schema errors a spec would get.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from mcpspec.diagnostics import Diagnostic, Span
from mcpspec.spec.errors import CLIENT_CONFIG


def client_config_error(path: str | os.PathLike[str], display_name: str) -> Diagnostic | None:
    """SC007 for ``path`` when it is a client's MCP config rather than a broken spec; None otherwise."""
    from mcpspec.importer.clients import load
    from mcpspec.importer.reading import ImportFailure, parse, position, syntax_of

    file = Path(path)
    try:
        config = load(file, "auto")
        data = parse(config.text, syntax_of(file), display_name)
    except (ImportFailure, OSError, ValueError, RecursionError):
        return None
    if isinstance(data, dict) and ("project" in data or data.get("version") == 1):
        return None  # a spec with mistakes: its own errors say more
    line, col = position(config.text, config.servers[0].pointer)
    count = len(config.servers)
    servers = f"its {count} servers" if count != 1 else "its server"
    message = f"this looks like a {config.client} config, not a sandbox spec: run `mcpspec import --from auto {shlex.quote(str(path))}` to write a spec for {servers}"
    return Diagnostic(display_name, Span(line, col, line, col + 1), CLIENT_CONFIG, message)
