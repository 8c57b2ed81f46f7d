"""``mcpspec import``: read an MCP client's config and write a sandbox spec for its servers.

``clients`` reads the ten client formats into one model (``model``), ``spec_writer``
turns it into a commented spec, ``findings`` says what the user must fix or rotate,
and ``merge`` adds the imported servers to an existing spec.
"""
