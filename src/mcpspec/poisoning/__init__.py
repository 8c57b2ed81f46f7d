"""Offline tool-poisoning checks of what MCP servers offer (`mcpspec lock`, `mcpspec run`)."""
