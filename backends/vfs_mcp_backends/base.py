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
    etags:       every entry carries a version token that changes with each write
                 (``BackendMount.version_token``: the ETag; on GCS the generation).
    conditional_writes: ``BackendMount.put_if`` works: a write that lands only if the
                 object still has the token that was read, or only if it does not exist.
    """

    symlinks: bool = False
    host_paths: bool = False
    empty_dirs: bool = True
    native_grep: bool = False
    timestamps: frozenset[str] = frozenset({"modified"})
    etags: bool = False
    conditional_writes: bool = False


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

    def version_token(self, info: Mapping[str, Any]) -> str | None:
        """The token ``put_if`` compares, from one ``info``/``ls``/``find`` entry of a file."""
        etag = info.get("ETag") or info.get("etag")
        return str(etag) if etag else None

    def put_if(self, path: str, data: bytes, *, if_match: str | None = None, create_only: bool = False) -> str | None:
        """Write ``data`` at ``path`` only if the object still has token ``if_match``
        (compare-and-swap), or with ``create_only`` only if nothing is there (create-exclusive).

        One request, decided by the service, so no other writer can slip in between. Returns
        the new object's token (None where the service does not return one). Raises
        ``PreconditionFailed`` when the condition does not hold (nothing was written).
        Backends without ``capabilities.conditional_writes`` raise NotImplementedError.
        """
        raise NotImplementedError(f"{type(self.fs).__name__} has no conditional writes")


class PreconditionFailed(Exception):
    """A conditional write did not happen: the object changed since its token was read,
    or (create-only) something is already there."""


def check_conditions(if_match: str | None, create_only: bool) -> None:
    """Refuse a condition that cannot hold: an object cannot match a token and be absent."""
    if if_match is not None and create_only:
        raise ValueError("put_if takes if_match or create_only, not both")


class BackendUnavailable(RuntimeError):
    """A backend's optional dependency is missing; the message says what to install."""
