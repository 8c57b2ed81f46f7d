"""Commands that start a server through its bubblewrap launcher: `mcpspec run`, `mcpspec lock`, `mcpspec verify`."""
