"""``build_server``: the one factory for an MCP server over a set of mounts (no module-level server)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from mcp.server.mcpserver import MCPServer

from vfs_mcp.filesystem import JailedFS
from vfs_mcp.jail import Jail
from vfs_mcp.mounts import Mount
from vfs_mcp.profiles import default
from vfs_mcp.settings import PROFILES, Settings

INSTRUCTIONS = (
    "Filesystem tools over the mounts listed by list_allowed_directories. Paths may be absolute inside a mount, "
    "mount URLs (s3://bucket/key, memory://name/x), or relative to the working directory. Errors start with a "
    "stable code (NOT_FOUND, ACCESS_DENIED, CONFLICT, ...) and say what to do instead."
)


def _version() -> str:
    try:
        return version("vfs-mcp")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


def build_server(mounts: Sequence[Mount], settings: Settings | None = None) -> MCPServer:
    """A new server with its own jail and working directory over ``mounts``."""
    settings = settings or Settings()
    unknown = [p for p in settings.profiles if p not in PROFILES]
    if unknown:
        raise ValueError(f"unknown profile {', '.join(unknown)}; known: {', '.join(PROFILES)}")
    vfs = JailedFS(Jail(mounts, deny=settings.deny))
    server: MCPServer = MCPServer("vfs-mcp", version=_version(), instructions=INSTRUCTIONS)
    if "default" in settings.profiles:
        default.register(server, vfs, settings)
    return server
