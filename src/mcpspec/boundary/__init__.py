"""`mcpspec check FILE --within BOUNDARY`: prove a spec's resolved plan stays inside a boundary's."""
