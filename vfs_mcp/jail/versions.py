"""The version of every file a call reads, noted while a recording asks (``noting``), and the
stored versions a replay reads in place of the newest (``pins``).

Both are per call (``Reads``), carried by the call's context (``CallContext.reads``, read from
the ``vfs`` the jail is given). Only code in the server's own process makes one: the harness's
recording middleware (``vfs_mcp.testing.recording``), which runs outside the call pipeline and
so hands it over ambiently (``noting``), read once where the call's context is built; no
argument of a request reaches it, so no client chooses which version of a file it reads. The
write path sees files as they are (``unpinned``: a change is planned on, checked against and
keeps what is there now) and what it reads to commit is not an input of the call (``unnoted``).

A version is what the store says of the bytes read: the ETag (and the VersionId, on a bucket
that keeps versions) of an object store's answer, else the sha256 of the bytes read.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from vfs_mcp.jail.resolve import Target


@dataclass(frozen=True)
class Version:
    """One version of a file, as a read saw it."""

    etag: str | None = None
    version_id: str | None = None
    """The store's id of this version (a versioned bucket's VersionId): what a replay pins."""
    sha256: str | None = None
    """Of the bytes read, where the store gave no ETag."""

    @classmethod
    def of(cls, raw: Mapping[str, Any], data: bytes | None = None) -> Version:
        """The version a store's metadata (``info``, or a GET's answer) names; without an ETag
        the sha256 of ``data``, the bytes read."""
        etag = raw.get("ETag") or raw.get("etag")
        if etag:
            version_id = raw.get("VersionId")
            return cls(str(etag).strip('"'), str(version_id) if version_id else None)
        return cls(sha256=hashlib.sha256(data or b"").hexdigest())

    def same(self, other: Version) -> bool | None:
        """Whether ``other`` holds the same bytes: the same ETag, else the same sha256 (None
        when they were read from stores that name versions differently)."""
        if self.etag is not None and other.etag is not None:
            return self.etag == other.etag
        if self.sha256 is not None and other.sha256 is not None:
            return self.sha256 == other.sha256
        return None

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in (("etag", self.etag), ("version_id", self.version_id), ("sha256", self.sha256)) if v}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Version:
        fields = {k: value.get(k) for k in ("etag", "version_id", "sha256")}
        if not any(isinstance(v, str) for v in fields.values()) or not all(
            v is None or isinstance(v, str) for v in fields.values()
        ):
            raise ValueError("a version is an object of etag, version_id or sha256 strings")
        return cls(**fields)

    def __str__(self) -> str:
        if self.etag is None:
            return f"sha256 {self.sha256}"
        return f"ETag {self.etag}" + (f" (VersionId {self.version_id})" if self.version_id else "")


@dataclass
class Reads:
    """The files one call read, each with the version it read first (how results name the
    file -> version), and the versions it reads in place of the newest (how results name the
    file -> VersionId)."""

    seen: dict[str, Version] = field(default_factory=dict)
    pins: Mapping[str, str] = field(default_factory=dict)
    pinned: bool = True
    """False while the write path reads (``unpinned``): files as they are now."""
    noted: bool = True
    """False while the write path commits (``unnoted``): its reads are not the call's inputs."""

    def note(self, target: Target, version: Version) -> None:
        self.seen.setdefault(target.display, version)

    def pin(self, target: Target) -> str | None:
        """The stored version of ``target`` to read (None: the newest)."""
        return self.pins.get(target.display) if self.pins and self.pinned else None


_reads: ContextVar[Reads | None] = ContextVar("vfs_mcp_reads", default=None)


@contextlib.contextmanager
def noting(pins: Mapping[str, str] | None = None) -> Iterator[Reads]:
    """Note the version of every file the calls inside read (and their worker threads);
    ``pins``: how results name a file -> the stored version (VersionId) to read of it."""
    reads = Reads(pins=dict(pins or {}))
    token = _reads.set(reads)
    try:
        yield reads
    finally:
        _reads.reset(token)


def current() -> Reads | None:
    """The reads a recording hands the call being started (None: nothing to note); read once,
    into the call's context."""
    return _reads.get()


@contextlib.contextmanager
def unpinned(reads: Reads | None) -> Iterator[None]:
    """The call's reads inside see files as they are now (still noted)."""
    if reads is None or not reads.pinned:
        yield
        return
    reads.pinned = False
    try:
        yield
    finally:
        reads.pinned = True


@contextlib.contextmanager
def unnoted(reads: Reads | None) -> Iterator[None]:
    """The call's reads inside are not its inputs (a change reading what it commits over)."""
    if reads is None or not reads.noted:
        yield
        return
    reads.noted = False
    try:
        yield
    finally:
        reads.noted = True


class Hashing:
    """A reader that hashes what is read through it (the version of a file where the store
    gives no ETag); everything else is the reader's own."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._sha = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._handle.read(size)
        self._sha.update(data)
        return data

    def readinto(self, buffer: Any) -> int:
        done = int(self._handle.readinto(buffer) or 0)
        self._sha.update(memoryview(buffer)[:done])
        return done

    def version(self) -> Version:
        return Version(sha256=self._sha.hexdigest())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


class Ranges(io.RawIOBase):
    """A seekable reader of ``size`` bytes that fetches what is read (``fetch(start, end)``):
    a stored version of a file, read by ranges."""

    def __init__(self, fetch: Callable[[int, int], bytes], size: int) -> None:
        super().__init__()
        self._fetch, self._size, self._pos = fetch, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), self._size - self._pos)
        if count <= 0:
            return 0
        data = self._fetch(self._pos, self._pos + count)
        memoryview(buffer)[: len(data)] = data
        self._pos += len(data)
        return len(data)
