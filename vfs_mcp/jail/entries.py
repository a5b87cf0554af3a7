"""What the jailed filesystem says about a path: an ``Entry``, the same fields on every store."""

from __future__ import annotations

import functools
import hashlib
import mimetypes
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends.scopes import later

Kind = Literal["file", "directory", "symlink", "other"]
KINDS: dict[str, Kind] = {"directory": "directory", "symlink": "symlink", "link": "symlink", "other": "other"}


@dataclass(slots=True)
class Entry:
    """Metadata of one path, the same fields on every backend (None where it has none)."""

    target: Target
    type: Kind
    size: int
    modified: float | None = None
    created: float | None = None
    accessed: float | None = None
    mode: int | None = None
    is_symlink: bool = False
    links: int | None = None
    etag: str | None = None
    storage_class: str | None = None
    token: str | None = None
    """What a conditional write compares (``BackendMount.version_token``), on stores with ETags."""
    identity: tuple[int, ...] | None = None
    """A local file's (device, inode, size, mtime, ctime), when it tells its content: the same
    identity later is the same bytes (None when the file changed too recently for it to tell,
    ``vfs_mcp_backends.localreads.identity``)."""

    @property
    def path(self) -> str:
        return self.target.display

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def mime_type(self) -> str | None:
        if self.type != "file":
            return None
        return mimetypes.guess_type(self.target.rel)[0] or "application/octet-stream"


class Found(list[Entry]):
    """The entries of a walk, and the folders it could not read: skipped (their contents are
    missing from the walk), to be reported, never fatal.
    """

    def __init__(self, entries: Iterable[Entry] = (), skipped: Iterable[Entry] = ()) -> None:
        super().__init__(entries)
        self.skipped = list(skipped)


@dataclass
class Listing:
    """A walk's paths as (mount-relative path, type, size), in depth-first name order (in key
    order on S3, see ``pages``), and the folders it could not read (their contents are missing)."""

    items: list[tuple[str, Kind, int]]
    skipped: list[str]
    last: bool = True
    """False for a page that more pages follow (``JailedFS.pages``)."""
    listed: int = 0
    """Store entries read for this page (keys on S3)."""
    until: str = ""
    """On stores listing in key order, the last key read so far (mount-relative)."""


def timestamp(value: Any) -> float | None:
    if value is None or value.__class__ is float:  # a local walk's: 60,000 a big tree
        return value  # type: ignore[no-any-return]
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)


class Pieces:
    """A file's content as pieces, one after the other, never joined into one copy: an edit's
    new bytes are the untouched head and tail of those it read (views of them) and the new
    text between (a 100 MB file's join cost 0.3 s, benchmarks/README.md). ``len`` is their
    bytes. ``base``: the bytes they were edited from, whose first ``same`` bytes they begin
    with (the two hashes share them: ``sha256s_aside``)."""

    __slots__ = ("base", "parts", "same", "size")

    def __init__(self, parts: Iterable[bytes | memoryview], base: bytes | None = None, same: int = 0) -> None:
        self.parts = tuple(parts)
        self.size = sum(len(part) for part in self.parts)
        self.base, self.same = base, same if base is not None else 0

    def __len__(self) -> int:
        return self.size

    def joined(self) -> bytes:
        return b"".join(self.parts)


def sha256(data: bytes | Pieces) -> str:
    if isinstance(data, Pieces):
        digest = hashlib.sha256()
        for part in data.parts:
            digest.update(part)
        return digest.hexdigest()
    return hashlib.sha256(data).hexdigest()


Digest = Callable[[], str]
"""A sha256 hex digest, had by calling (``sha256_aside``)."""

HASH_ASIDE_BYTES = 512 * 1024
"""From this size a hash is worth a thread: it costs ten times the hand-over."""
_HASHER = ThreadPoolExecutor(1, thread_name_prefix="vfs-mcp-sha256")
"""One: a write's two hashes (what it writes, what it replaces for its undo record) run one
after the other beside its fsyncs (one job: ``sha256s_aside``, started as the write waits for
the disk); a second thread measured worse on a loaded 2-core machine (benchmarks/README.md),
where it takes the core the call needs. Its thread starts with the first hash."""


def sha256_aside(data: bytes | Pieces) -> Digest:
    """The sha256 of ``data``, to be had by calling what this returns: a big one is hashed on
    another thread (hashlib lets go of the GIL) while the caller goes on; in a change, from its
    first wait for its store, as it writes (``scopes.later``)."""
    if len(data) < HASH_ASIDE_BYTES:
        digest = sha256(data)
        return lambda: digest
    return later(_HASHER, functools.partial(sha256, data)).result


def sha256s_aside(data: bytes | Pieces, before: bytes) -> tuple[Digest, Digest]:
    """The sha256 of ``data`` and of ``before``, the bytes it replaces, each had by calling what
    this returns: hashed as one job on the hashing thread (``sha256_aside``), which hashes the
    bytes they begin with alike (``Pieces.same``) once and copies the hash's state where they
    part. A line edited in the middle of a file hashes 1.5 times the file's bytes, not twice."""
    if len(data) + len(before) < HASH_ASIDE_BYTES:
        both = _both(data, before)
        return (lambda: both[0]), (lambda: both[1])
    job = later(_HASHER, functools.partial(_both, data, before))
    return (lambda: job.result()[0]), (lambda: job.result()[1])


def _both(data: bytes | Pieces, before: bytes) -> tuple[str, str]:
    same = data.same if isinstance(data, Pieces) and data.base is before else 0
    head = hashlib.sha256(memoryview(before)[:same])
    written = head.copy()
    for part in _after(data.parts if isinstance(data, Pieces) else (data,), same):
        written.update(part)
    head.update(memoryview(before)[same:])
    return written.hexdigest(), head.hexdigest()


def _after(parts: Iterable[bytes | memoryview], skip: int) -> Iterator[bytes | memoryview]:
    """``parts`` from byte ``skip`` of them on (views, no copy)."""
    for part in parts:
        if skip >= len(part):
            skip -= len(part)
            continue
        yield memoryview(part)[skip:] if skip else part
        skip = 0


def tree_order(entry: Entry) -> str:
    """Sort key for depth-first name order ("/" sorts before every character a name holds)."""
    return entry.target.rel.replace("/", "\x00")
