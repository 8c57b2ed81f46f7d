"""``mcpspec diff``: the privilege delta between two versions of a spec, server by server.

Two resolved Plans are compared (not their YAML text): reordering keys or renaming an anchor
changes nothing. :func:`mcpspec.diff.run.diff_sources` is the entry point; the changes and the
verdict are in :mod:`mcpspec.diff.model`, their formats in :mod:`mcpspec.diff.render`.
"""
