"""A small built-in catalog of well-known MCP servers: launch, tools, egress and least-privilege credential.

`lookup(argv | url)` recognises a server from the way a client config starts it; `entries()` lists them.
"""

from mcpspec.catalog.lookup import entries, get, lookup
from mcpspec.catalog.model import CatalogMount, CatalogTool, Credential, Entry, Package

__all__ = ["CatalogMount", "CatalogTool", "Credential", "Entry", "Package", "entries", "get", "lookup"]
