"""The mcp-sandbox.yaml language: pydantic models, value types and schema export."""
