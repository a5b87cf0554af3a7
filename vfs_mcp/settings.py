"""Server-wide settings shared by every profile."""

from __future__ import annotations

from dataclasses import dataclass, field

from vfs_mcp.ops.read import DEFAULT_MAX_READ_BYTES

PROFILES = ("default",)


@dataclass(frozen=True)
class Settings:
    profiles: tuple[str, ...] = ("default",)
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES
    deny: tuple[str, ...] = field(default_factory=tuple)
