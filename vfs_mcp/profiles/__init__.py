"""Compatibility profiles: each a table of tools over the same operations.

A profile is a package whose ``TOOLS`` is its table (``table.Tool`` rows, in the order
``tools/list`` shows them), named in ``PROFILES`` and imported only when chosen. ``default``
and ``official`` use the same tool names with different arguments, so they exclude each
other. The server registers the tables (``vfs_mcp.server.tools``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from vfs_mcp.profiles.table import Tool

PROFILES: dict[str, str] = {
    "default": "vfs_mcp.profiles.default",
    "official": "vfs_mcp.profiles.official",
    "fs": "vfs_mcp.profiles.fs",
    "ide": "vfs_mcp.profiles.ide",
}
EXCLUSIVE = (("default", "official"),)
STATED_DEFAULTS = ("official", "fs", "ide")
"""Profiles whose schemas state every default their original states (``false`` and ``0`` too)."""
TEXT_EXACT = ("official",)
"""Profiles whose replies' text is their original's byte for byte: what the server adds to a reply
(a change's id, a note that it cannot be undone) goes in ``_meta`` only."""


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


def profile_of(module: str) -> str | None:
    """The profile whose package holds ``module`` (an adapter's), None when no profile's does."""
    for profile, package in PROFILES.items():
        if module == package or module.startswith(f"{package}."):
            return profile
    return None


def tools_of(profile: str) -> tuple[Tool, ...]:
    """The table of ``profile`` (its package imported on first use)."""
    tools: tuple[Tool, ...] = importlib.import_module(PROFILES[profile]).TOOLS
    return tools
