"""The value every backend returns: a filesystem, the root inside it, and what it can do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fsspec import AbstractFileSystem

Options = Mapping[str, Any]
"""Storage options for one mount (from the config file), passed to the backend as-is."""


@dataclass(frozen=True)
class Capabilities:
    """Real differences between backends, declared once instead of tested for everywhere.

    symlinks:    the store has symbolic links (and so real paths to check).
    host_paths:  fsspec paths are host paths, usable with ``os`` calls (atomic rename, ripgrep).
    empty_dirs:  a directory can exist with nothing in it.
    native_grep: ripgrep can search the files in place.
    timestamps:  which of created/modified/accessed ``info()`` reports.
    """

    symlinks: bool = False
    host_paths: bool = False
    empty_dirs: bool = True
    native_grep: bool = False
    timestamps: frozenset[str] = frozenset({"modified"})


@dataclass
class BackendMount:
    """A configured filesystem and the fsspec path of the mount root inside it."""

    fs: AbstractFileSystem
    root: str
    capabilities: Capabilities = field(default_factory=Capabilities)

    def invalidate(self, path: str | None = None) -> None:
        """Forget cached listings after our own write (s3fs caches them)."""
        self.fs.invalidate_cache(path)

    def invalidate_tree(self, path: str) -> None:
        """Forget cached listings of ``path`` and everything below it, before a fresh walk.

        s3fs's ``invalidate_cache`` clears a path and its parents only, and its ``find``
        trusts cached parents, so a stale entry below would hide directories.
        """
        cache = getattr(self.fs, "dircache", None)
        if cache is not None:
            base = path.rstrip("/")
            for key in [k for k in list(cache) if k == base or str(k).startswith(base + "/")]:
                cache.pop(key, None)
        self.fs.invalidate_cache(path)


class BackendUnavailable(RuntimeError):
    """A backend's optional dependency is missing; the message says what to install."""
