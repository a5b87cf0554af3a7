"""The default profile (SPEC §4): seed 000's tool set, widened by the other seeds.

Registration only: each tool calls one operation and renders its result. A server whose
mounts are all read-only does not list the write tools at all (SPEC §6).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.profiles.default import files, search, text
from vfs_mcp.settings import Settings


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Add the default tools to ``server``; write tools only when some mount is writable."""
    files.register_read(server, vfs, settings)
    text.register_read(server, vfs, settings)
    search.register(server, vfs, settings)
    if any(not mount.read_only for mount in vfs.mounts):
        files.register_write(server, vfs, settings)
        text.register_write(server, vfs, settings)
