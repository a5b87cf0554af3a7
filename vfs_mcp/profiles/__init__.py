"""Compatibility profiles: each registers a tool set over the same operations.

A profile is a module with ``register(server, vfs, settings)``, named in ``PROFILES``
and imported only when chosen. ``default`` and ``official`` use the same tool names with
different arguments, so they exclude each other.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol

from mcp.server.mcpserver import MCPServer

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.server import sdk, toolset
from vfs_mcp.settings import Settings

PROFILES: dict[str, str] = {
    "default": "vfs_mcp.profiles.default",
    "official": "vfs_mcp.profiles.official",
    "fs": "vfs_mcp.profiles.fs",
    "ide": "vfs_mcp.profiles.ide",
}
EXCLUSIVE = (("default", "official"),)
SEED_EXACT = ("official", "fs", "ide")
"""Profiles whose schemas state every default their seed states (``false`` and ``0`` too)."""


class Profile(Protocol):
    def register(self, server: MCPServer, vfs: JailedFS, settings: Settings) -> None: ...


def check(profiles: Sequence[str]) -> None:
    """Refuse unknown profiles and combinations that cannot share one server (ValueError)."""
    if not profiles:
        raise ValueError("no profile chosen; known: " + ", ".join(PROFILES))
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        raise ValueError(f"unknown profile {', '.join(unknown)}; known: {', '.join(PROFILES)}")
    for pair in EXCLUSIVE:
        if all(p in profiles for p in pair):
            raise ValueError(f"profiles {pair[0]} and {pair[1]} name tools alike; choose one of them")


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Register every chosen profile's tools, in the order given; then publish them compactly,
    only those ``settings.tools`` names (ValueError for a name that is neither a tool nor a set)."""
    check(settings.profiles)
    exact: set[str] = set()
    for name in dict.fromkeys(settings.profiles):
        before = {tool.name for tool in sdk.registered_tools(server)}
        module: Profile = importlib.import_module(PROFILES[name])  # type: ignore[assignment]
        module.register(server, vfs, settings)
        if name in SEED_EXACT:
            exact |= {tool.name for tool in sdk.registered_tools(server)} - before
    toolset.publish(server, settings.tools, exact)
