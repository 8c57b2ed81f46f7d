"""Trust-graph analysis of what servers share."""
