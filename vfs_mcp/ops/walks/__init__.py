"""Choosing the paths a recursive operation looks at (depth, globs, ignore files) and reporting its progress."""
