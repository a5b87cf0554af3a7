"""vfs-mcp: an MCP filesystem server over any fsspec filesystem, inside one root jail."""

from vfs_mcp.server import build_server

__all__ = ["build_server"]
