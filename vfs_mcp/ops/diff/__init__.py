"""Unified diffs of two texts, bounded in time, memory and size; comparing two files."""
