"""Text edits: find-and-replace, numbered lines, patches; each a plan for the one write path."""
