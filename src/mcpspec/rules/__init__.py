"""Risk rules: the registry, the engine that runs them, and the catalog by category."""
