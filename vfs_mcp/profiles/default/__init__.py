"""The default profile (SPEC §4): seed 000's tool set, widened by the other seeds.

Its table, in the order ``tools/list`` shows it: the tools that read, then those that write
(listed only when some mount is writable, SPEC §6).
"""

from __future__ import annotations

from vfs_mcp.profiles.default import analytics, files, search, text

TOOLS = (*files.READS, *text.READS, *search.TOOLS, *analytics.TOOLS, *files.WRITES, *text.WRITES)
