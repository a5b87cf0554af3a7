"""Compatibility profiles: each registers a tool set over the same operations."""
