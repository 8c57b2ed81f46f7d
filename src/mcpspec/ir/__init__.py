"""The resolved, target-neutral Plan and the steps that build it."""
