"""mcpspec: a compiler and linter for MCP server sandbox policy."""

__version__ = "0.1.0"
