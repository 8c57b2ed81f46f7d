"""``mcpspec report``: what a reviewer reads before approving a change to mcp-sandbox.yaml.

``data`` gathers everything the report shows (summary, risk tiers, server cards,
findings with their rule docs and excerpts, waivers, a target's enforcement) into
plain dataclasses; ``layout`` places the trust graph in columns for an inline SVG;
``html`` renders the self-contained page through jinja2 with autoescaping, and
``markdown`` the same content for a pull-request comment.
"""
