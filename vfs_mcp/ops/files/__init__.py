"""Whole files and folders: reading, line reads, listing, writing, moving and copying, undo."""
