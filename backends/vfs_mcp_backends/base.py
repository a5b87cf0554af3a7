"""The value every backend returns: a filesystem, the root inside it, and what it can do."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fsspec import AbstractFileSystem

from vfs_mcp_backends.fetches import LoopFetches
from vfs_mcp_backends.folder_locks import held_here
from vfs_mcp_backends.hostpaths import real_path

if TYPE_CHECKING:
    from vfs_mcp_backends.layers import Layer

Names = tuple[list[tuple[str, str, int]], list[str]]
"""A walk as (path, fsspec type, size) in depth-first name order, and the folders it could not read."""

Keep = Callable[[str, str], bool]
"""Whether a walk lists an entry, by its name and its path below the walk's start."""

Child = tuple[str, str, int]
"""A directory's entry as (name, fsspec type, size)."""


@dataclass
class Page:
    """One page of a walk (``BackendMount.pages``): entries as (path below the walk's start,
    fsspec type, size), and the folders it could not read."""

    items: list[tuple[str, str, int]]
    unreadable: list[str] = field(default_factory=list)
    last: bool = True
    """False when more pages follow."""
    listed: int = 0
    """Store entries the page read (keys, on S3): at least one when the walked folder is there."""
    until: str = ""
    """On stores that list in key order, the last key the page read (below the walk's start):
    every key before it has been listed."""


Options = Mapping[str, Any]
"""Storage options for one mount (from the config file), passed to the backend as-is."""


@dataclass(frozen=True)
class Capabilities:
    """Real differences between stores, declared once instead of tested for everywhere.

    symlinks:      the store has symbolic links: ``info`` and write ``_open`` take ``follow``.
    host_paths:    paths have a real host path (``BackendMount.host_path``): ripgrep, watchers.
    empty_dirs:    a directory can exist with nothing in it.
    native_grep:   ripgrep can search the files in place.
    atomic_rename: ``mv`` renames in one step (never a copy and a delete).
    append:        ``_open(path, "ab")`` appends without rewriting the file.
    modes:         files have permission bits; write ``_open`` takes ``permissions``.
    native_copy:   ``cp_file`` copies inside the store without the bytes passing through us.
    timestamps:    which of created/modified/accessed ``info()`` reports.
    etags:         every entry carries a version token that changes with each write
                   (``BackendMount.version_token``: the ETag; on GCS the generation).
    conditional_writes: ``BackendMount.put_if`` works: a write that lands only if the
                   object still has the token that was read, or only if it does not exist.
    local_io:      every call is served by this machine in microseconds (a disk, memory): many
                   small calls run one after another, since a thread each would cost more than
                   the call; on other stores each call waits on a network, so they overlap.
    locked_writes: ``BackendMount.exclusive`` holds off every other writer of a path that
                   takes it, in other processes too (an OS lock on local disks; a memory
                   store lives in one process). Without it or ``conditional_writes``, a
                   read-check-write is atomic only among the calls of one server.
    """

    symlinks: bool = False
    host_paths: bool = False
    empty_dirs: bool = True
    native_grep: bool = False
    atomic_rename: bool = False
    append: bool = False
    modes: bool = False
    native_copy: bool = False
    timestamps: frozenset[str] = frozenset({"modified"})
    etags: bool = False
    conditional_writes: bool = False
    locked_writes: bool = False
    local_io: bool = False


@dataclass
class BackendMount:
    """A configured filesystem and the fsspec path of the mount root inside it.

    Writes go through fsspec's staged-file protocol: ``fs._open(path, "wb", autocommit=False)``,
    ``write``, ``close``, then ``commit`` (visible) or ``discard`` (never visible).
    """

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

    def walk(self, path: str, maxdepth: int | None = None, metadata: bool = True) -> dict[str, dict[str, Any]]:
        """Every entry below ``path`` by name (``fs.find(withdirs=True, detail=True)``).
        ``metadata=False`` lets a store that can skip each entry's metadata (a local disk's
        lstat) give names and types only; the others give everything anyway."""
        found: dict[str, dict[str, Any]] = self.fs.find(path, maxdepth=maxdepth, withdirs=True, detail=True)
        return found

    def entries(
        self, path: str, maxdepth: int | None = None, metadata: bool = True
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """``walk``'s entries as (path below ``path``, metadata): without the root itself, the
        markers object stores keep for folders, or anything deeper than ``maxdepth``."""
        base = path.rstrip("/")
        start = len(base) + 1
        for key, raw in self.walk(base, maxdepth, metadata).items():
            name = str(key)
            if name.endswith("/") or name == base or not name.startswith(base + "/"):
                continue  # an S3 directory marker (also reported as a directory), or the root
            rel = name[start:]
            if maxdepth is not None and rel.count("/") >= maxdepth:
                continue  # a store that honours maxdepth loosely (adlfs lists deeper)
            yield rel, raw

    def names(self, path: str, maxdepth: int | None = None, metadata: bool = True, keep: Keep | None = None) -> Names:
        """What ``entries`` lists, as (path below ``path``, type, size) in depth-first name
        order, and the folders that could not be read: for callers that need no more.
        ``keep(name, path below)``: list only the entries it accepts (a name search)."""
        items: list[tuple[str, str, int]] = []
        unreadable: list[str] = []
        for rel, raw in self.entries(path, maxdepth, metadata):
            if raw.get("unreadable"):
                unreadable.append(rel)
            if keep is not None and not keep(rel.rpartition("/")[2], rel):
                continue
            kind = str(raw.get("type"))
            items.append((rel, kind, int(raw.get("size") or 0) if kind == "file" else 0))
        items.sort(key=lambda item: item[0].replace("/", "\x00"))  # "/" before every character of a name
        return items, unreadable

    def pages(
        self, path: str, maxdepth: int | None = None, metadata: bool = True, keep: Keep | None = None
    ) -> Iterator[Page]:
        """What ``names`` lists, a page at a time where the store lists in pages (a caller that
        stops early sends no more requests), in one page elsewhere. Folders come before what is
        in them; within a page, entries are in depth-first name order here, in key order on
        stores that list keys (S3)."""
        items, unreadable = self.names(path, maxdepth, metadata, keep)
        yield Page(items, unreadable, True, len(items))

    def ls_many(self, paths: list[str], cursors: list[str | None]) -> list[tuple[list[Child], str | None]]:
        """One page of each directory's entries (a delimiter listing on object stores), listed
        concurrently where the store can, in name order, and the cursor to list the rest from
        (None when the page holds them all). A cursor in ``cursors`` continues that listing.
        A directory that is gone lists nothing. Here: each directory whole, one after another."""
        out: list[tuple[list[Child], str | None]] = []
        for path in paths:
            base = path.rstrip("/")
            try:
                listed = self.fs.ls(path, detail=True)
            except FileNotFoundError:
                listed = []
            entries = []
            for raw in listed:
                name = str(raw["name"]).rstrip("/")
                if name != base and name.startswith(base + "/"):
                    kind = str(raw.get("type"))
                    size = int(raw.get("size") or 0) if kind == "file" else 0
                    entries.append((name[len(base) + 1 :], kind, size))
            out.append((sorted(entries), None))
        return out

    def fetches(self) -> LoopFetches | None:
        """A batch of whole-file fetches by the store's own event loop where it has one (s3fs,
        gcsfs, adlfs), stopped as one (``LoopFetches``). None elsewhere (the caller uses threads)."""
        return LoopFetches(self.fs) if getattr(self.fs, "async_impl", False) else None

    def read_whole(self, path: str, limit: int) -> tuple[dict[str, Any], bytes | None] | None:
        """A regular file's ``info`` (links followed) and its bytes when it holds at most
        ``limit`` bytes (else None), from one open: for a store that can measure an open file
        (a local disk). None where it cannot; the caller then asks ``info`` and ``cat_file``.
        """
        return None

    def read_version(
        self, path: str, start: int | None = None, end: int | None = None, version: str | None = None
    ) -> tuple[dict[str, Any], bytes] | None:
        """Bytes ``[start, end)`` of a file (all of it by default; an empty range: none, its
        metadata alone) with its metadata as ``info`` gives it (its ETag, its VersionId), from
        the same answer; ``version``: of that stored version rather than the newest, on a store
        that keeps versions (a versioned bucket). None where a store cannot (the caller reads
        with ``cat_file`` and hashes what it read).
        """
        return None

    @property
    def layer(self) -> Layer | None:
        """The pending layer of a mount under review (``overlay.OverlayMount``); None for a store."""
        return None

    def host_path(self, path: str) -> str | None:
        """The real host path of ``path`` (links inside the store resolved); None where the
        store has no host paths.
        """
        return None

    def resolve_links(self, path: str, follow: bool) -> str:
        """Where ``path`` leads once the links on its way are followed (all of them, or all but
        a final one), as a path of the store's real root, for the jail's check (stores with
        ``symlinks``): the host's real path here. Never raises for a link that leads out:
        the path returned is outside the root."""
        if follow:
            return real_path(path)
        return os.path.join(real_path(os.path.dirname(path)), os.path.basename(path))

    def narrowed(self, root: str) -> BackendMount:
        """This mount cut down to ``root``, a directory inside it."""
        return dataclasses.replace(self, root=root)

    def sweep(
        self, older_than: float, folders: Sequence[str] | None = None, pause: Callable[[], object] | None = None
    ) -> int:
        """Delete temp files that writes killed mid-way left, older than ``older_than`` seconds
        (``folders``: only in and below these fsspec paths); returns how many went (stores that
        stage no temp files have none). ``pause``: called now and then on the way, to wait
        while something comes first (a server's calls).
        """
        return 0

    def hold(self, folders: Mapping[str, bool], wait: float | None = None) -> contextlib.AbstractContextManager[None]:
        """Hold off the other writers while a change is checked and committed: each folder
        (an fsspec path) exclusively (its entries change) or shared (a change lies below it),
        in this process, and in other processes on stores with ``locked_writes`` (``folder_locks.py``).
        ``LockBusy`` (nothing held) when a folder stays held for ``wait`` seconds."""
        return held_here(self.fs, folders, wait)

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


class NotRegularFile(OSError):
    """Content was asked of a FIFO, socket or device: refused, never opened in a blocking way."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EINVAL, "not a regular file", path)
