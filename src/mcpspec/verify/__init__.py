"""`mcpspec verify`: start a probe in place of each server, inside its sandbox, and check every control of the spec."""
