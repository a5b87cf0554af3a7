"""Searching file contents: grep's query, its two engines (a Python scan over RE2, ripgrep) and their shared parts."""
