"""Renderers of diagnostics and findings."""
