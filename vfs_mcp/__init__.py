"""vfs-mcp: an MCP filesystem server over any fsspec filesystem, inside one root jail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vfs_mcp.server.build import build_server

__all__ = ["build_server"]


def __getattr__(name: str) -> Any:
    # Lazy: the pytest plugin imports this package in every test session of every project
    # that has vfs-mcp installed; the MCP SDK should load only when a server is built.
    if name == "build_server":
        from vfs_mcp.server.build import build_server

        return build_server
    raise AttributeError(name)
