"""The content index of an object-store mount: which files a grep needs to read, never stale.

A grep over an object store lists the prefix and, without an index, reads every object. With
one, each object's version in the listing (``MountIndex.version``) is looked up: an object
indexed at that version and size is read only if the index says it may match (it holds every
trigram the pattern needs, ``trigrams.needed``); an object new or changed since is read,
searched, and indexed on the side. Every match is still found on the bytes read, so the answer
(matches, order, context, limits, counts, notes) is the full scan's; a pattern with no literal
of three characters reads everything, as before. A write behind the server's back changes the
version: the next search reads that object again. A file written whole through the server is
known at once, its version at hand (S3: the ETag is the bytes' MD5; GCS and Azure: the
conditional put answered the new generation or ETag, ``Receipt.versions``): the change tells
the index (``changes.MADE``), which keeps its text (``MountIndex.written``) until the next
search's segment files it, so the next search reads it only if it may match.

Versions. On S3 an object is known by its ETag, and its bytes are indexed only when their MD5
is that ETag (a single PUT's): bytes written between the listing and the read are never filed
under the old ETag, which comes back whenever those old bytes do. Objects whose ETag is no MD5
(multipart uploads, SSE-KMS) are read by every search. On GCS an object is known by its
generation and on Azure by its ETag: neither ever names a later version of the object, so
bytes read after a newer write are filed under a version no listing shows again.

Storage. Postings are SQLite FTS5 tables (``tokenize='trigram'``, ``content=''``: no copy of the
text, ``detail=none``: document ids only, no positions), the well-kept library that Python
already ships: delta-coded posting lists in a B-tree, an integrity check of its own, nothing to
install. A segment is one SQLite file: the FTS5 table and the ``docs`` it indexed (key,
version, size, whether binary). Segments are immutable and live in the state store as
``index/<mount id>.<sha256>.db``, so every replica sharing the store shares them: a new segment
is written once (a PUT) by the search that read new objects, and a replica downloads a segment
once (a GET) and keeps it in a private folder. A segment whose bytes do not hash to its name,
that SQLite's ``quick_check`` refuses, or of another format or mount, is deleted and its
objects are read and indexed again: an index is never trusted beyond its checks.

Bounds. An object over ``MAX_INDEXED_BYTES`` is not indexed (read each time); binary ones are
filed as binary (a grep skips them, so they are never read again). The index holds 7 % of
15 MB of source text, a third of 1 MB, about half of random words (docs/s3.md has the figures).
Building costs at most ``QUEUE_BYTES`` of queued bytes: a search hands what it read to one
indexing thread, which runs at the lowest priority (``NICE``), and never waits for it; what
does not fit is fetched again by that thread after the search (``backfill``). Writes through
the server keep at most ``WRITTEN_BYTES`` of text. Searching loads each segment's ``docs``
(about 100 bytes an object) and asks FTS5 for document ids. Segments are compacted by
forgetting: past ``MAX_SEGMENTS``, or when a search of the whole mount finds most of a
segment's objects changed, the search treats the segment's objects as new, reads and indexes
them into its own segment, and deletes the old one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import shutil
import sqlite3
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.search.query import GrepQuery
from vfs_mcp.ops.search.segments import BINARY, Filed, Segment, Writer, text_of
from vfs_mcp.ops.search.trigrams import AllOf, fts_query, holds, needed
from vfs_mcp.sessions import Slot
from vfs_mcp_backends.azure import AzureMount
from vfs_mcp_backends.gcs import GCSMount

if TYPE_CHECKING:
    from vfs_mcp.changes.state import StateStore

log = logging.getLogger("vfs_mcp")

FOLDER = "index"
INDEXES: Slot[Indexes | bool] = Slot("the content indexes")
"""Where a ``JailedFS`` keeps the server's ``Indexes``; False there turns the index off (``--no-index``)."""
MAX_INDEXED_BYTES = 4 << 20
QUEUE_BYTES = 64 << 20
WRITTEN_BYTES = 16 << 20
"""Text of the objects written through the server that one mount's index keeps until a search's
segment files them; past it the oldest are let go (the next search reads them)."""
MAX_SEGMENTS = 8
NICE = 19
"""The indexing thread's niceness (Linux): it takes the CPU the search's threads leave."""
BACKFILL_WIDTH = 8


@dataclass
class Stats:
    """What the index did, for ``vfs://metrics``: counted under a lock (``count``), since
    searches on many threads and the indexing thread add to them at once."""

    searches: int = 0
    """Searches of an object-store folder with the index on."""
    narrowed: int = 0
    """Of those, searches the index could narrow (a pattern with literal trigrams)."""
    objects_skipped: int = 0
    """Objects the index showed could not match: not read."""
    bytes_saved: int = 0
    """Their bytes."""
    objects_read: int = 0
    """Objects the searches read (new, changed, or candidates)."""
    objects_indexed: int = 0
    segments_written: int = 0
    segments_dropped: int = 0
    """Segments that failed their checks (or were compacted away): deleted, never trusted."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, **added: int) -> None:
        """Add to the named figures, all at once (a snapshot sees all of them or none)."""
        with self.lock:
            for name, value in added.items():
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, int]:
        with self.lock:
            return {name: value for name, value in self.__dict__.items() if name != "lock"}


class Build:
    """The segment one search writes: the objects it read that the index did not know, and
    those written through the server since (``MountIndex.written``)."""

    def __init__(self, index: MountIndex, vfs: JailedFS, forgotten: list[str]) -> None:
        self.index = index
        self.vfs = vfs
        self.forgotten = forgotten
        self.left: list[Entry] = []
        """Objects that did not fit the queue: fetched again after the search."""
        self.carried: list[Filed] = []
        """Objects written through the server that this segment files (``MountIndex.written``)."""
        self.writer = Writer(os.path.join(index.folder, f"build-{os.urandom(8).hex()}.db"), index.id)

    def add(self, entry: Entry, data: bytes) -> None:
        """Index ``data``, the bytes of ``entry`` as read (on the indexing thread)."""
        version = self.index.proven(entry, data)
        if version is not None:  # else not the bytes the listing named (changed since), or unprovable
            self.writer.file(Filed(entry.target.rel, version, entry.size, text_of(data)))

    def backfill(self) -> None:
        """Fetch and index what did not fit the queue during the search (on the indexing thread)."""
        if not self.left:
            return
        entries = {e.target.rel: e for e in self.left}
        fetched = self.vfs.cat_each(
            ((e.target, e.size) for e in self.left), width=BACKFILL_WIDTH, in_flight=QUEUE_BYTES // 2
        )
        try:
            for target, data in fetched:
                if isinstance(data, bytes):
                    self.add(entries[target.rel], data)
        finally:
            fetched.close()


_DONE = object()


class MountIndex:
    """The index of one mount, its segments shared through the state store."""

    def __init__(self, store: StateStore, mount: Mount, stats: Stats) -> None:
        self.store = store
        self.id = hashlib.sha256(mount.url.encode()).hexdigest()[:24]
        self.stats = stats
        self.by_token = isinstance(mount.backend, (GCSMount, AzureMount))
        """Objects known by their version token (GCS's generation, Azure's ETag), which no later
        version of the object has again; elsewhere by an ETag that is their bytes' MD5 (S3)."""
        self.folder = tempfile.mkdtemp(prefix="vfs-mcp-index-")  # private (0700): downloads and builds
        self.segments: dict[str, Segment] = {}
        self.written: dict[str, Filed] = {}
        """Objects written through this server since the last segment that holds them (S3:
        their ETag is their MD5, known without asking): a search knows them without reading."""
        self.written_bytes = 0
        self.lock = threading.Lock()
        self.jobs: queue.Queue[tuple[Build, Any, Any]] = queue.Queue()
        self.queued = 0
        self.idle = threading.Event()
        self.idle.set()
        self.pending = 0
        threading.Thread(target=self._work, name="vfs-mcp-index", daemon=True).start()
        weakref.finalize(self, shutil.rmtree, self.folder, True)

    # -- versions -------------------------------------------------------------------------

    def version(self, entry: Entry) -> str | None:
        """What the index knows ``entry``'s version by (None: not indexed, read every time)."""
        if self.by_token:
            return _unquoted(entry.token)
        etag = (entry.etag or "").lower()
        return etag if len(etag) == 32 else None  # an ETag that is no MD5 (multipart, SSE-KMS): never indexed

    def proven(self, entry: Entry, data: bytes) -> str | None:
        """``entry``'s version when ``data`` are certainly its bytes (never those of a version
        written between the listing and the read): their MD5 is the ETag; where versions never
        come back (tokens), bytes of a later version are filed under one no listing shows again."""
        version = self.version(entry)
        if version is None or len(data) != entry.size:
            return None
        if self.by_token or hashlib.md5(data, usedforsecurity=False).hexdigest() == version:
            return version
        return None

    def wrote(self, target: Target, data: bytes, token: str | None) -> None:
        """``data`` is now the object at ``target``, written through this server: known from
        here on without a read. Its version: on S3 the ETag, the bytes' MD5; on GCS and Azure
        ``token``, what the store answered the write with (none: the next search reads it)."""
        version = _unquoted(token) if self.by_token else hashlib.md5(data, usedforsecurity=False).hexdigest()
        if version is None or len(data) > MAX_INDEXED_BYTES:
            return
        known = Filed(target.rel, version, len(data), text_of(data))
        with self.lock:
            old = self.written.pop(known.rel, None)
            self.written_bytes += known.weight - (old.weight if old else 0)
            self.written[known.rel] = known
            while self.written_bytes > WRITTEN_BYTES:  # the oldest go: the next search reads them
                self.written_bytes -= self.written.pop(next(iter(self.written))).weight

    def recalled(self, rel: str, version: str | None, size: int) -> Filed | None:
        with self.lock:
            known = self.written.get(rel)
        return known if known is not None and known.version == version and known.size == size else None

    # -- segments -------------------------------------------------------------------------

    def refresh(self) -> list[Segment]:
        """The segments the state store holds now (one listing of it), new ones loaded and checked."""
        names = sorted(
            item.name
            for item in self.store.listing(FOLDER)
            if item.name.startswith(self.id + ".") and item.name.endswith(".db")
        )
        with self.lock:
            for gone in set(self.segments) - set(names):
                self.segments.pop(gone).close()
            for name in names:
                if name not in self.segments:
                    loaded = self._load(name)
                    if loaded is not None:
                        self.segments[name] = loaded
            return [self.segments[name] for name in names if name in self.segments]

    def _load(self, name: str) -> Segment | None:
        local = self.store.host_folder
        path = os.path.join(local, FOLDER, name) if local else os.path.join(self.folder, name)
        try:
            if local:
                with open(path, "rb") as file:
                    data = file.read()
            else:
                data = self.store.read(f"{FOLDER}/{name}")
            if hashlib.sha256(data).hexdigest()[:32] != name.split(".")[1]:
                raise ValueError("its bytes do not hash to its name")
            if not local:
                with open(path, "wb") as file:
                    file.write(data)
            return Segment(name, path, self.id)
        except FileNotFoundError:
            return None  # deleted by another replica meanwhile
        except (OSError, ValueError, sqlite3.Error) as err:
            log.warning("index segment %s failed its checks (%s): dropped, its objects are indexed again", name, err)
            self.stats.count(segments_dropped=1)
            with contextlib.suppress(OSError):
                self.store.delete(f"{FOLDER}/{name}")
            if not local:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            return None

    def _adopt(self, name: str, data: bytes, build: Build) -> None:
        """Open the segment this process just wrote, so that it is not downloaded again; the
        objects written through the server that it files are known by it from now on."""
        local = self.store.host_folder
        path = os.path.join(local, FOLDER, name) if local else os.path.join(self.folder, name)
        if not local:
            with open(path, "wb") as file:
                file.write(data)
        with self.lock:
            if name not in self.segments:
                self.segments[name] = Segment(name, path, self.id)
            for known in build.carried:
                if self.written.get(known.rel) is known:
                    self.written_bytes -= self.written.pop(known.rel).weight

    # -- building, on one thread of its own ------------------------------------------------

    def offer(self, build: Build, entry: Entry | Filed, data: bytes = b"") -> None:
        """Index ``data`` (or a ``Filed`` object's text) on the side: queued, or, when the queue is
        full, left for the backfill (a ``Filed`` is queued still: ``WRITTEN_BYTES`` bounds those)."""
        size = entry.weight if isinstance(entry, Filed) else len(data)
        if size > MAX_INDEXED_BYTES:
            return
        with self.lock:
            if self.queued + size > QUEUE_BYTES and isinstance(entry, Entry):
                build.left.append(entry)
                return
            self.queued += size
        self.jobs.put((build, entry, data))

    def close_build(self, build: Build) -> None:
        with self.lock:
            self.pending += 1
            self.idle.clear()
        self.jobs.put((build, _DONE, None))

    def settle(self, timeout: float = 60.0) -> bool:
        """Wait until every search's segment is written (tests, benchmarks); False on timeout."""
        return self.idle.wait(timeout)

    def _work(self) -> None:
        if sys.platform == "linux":  # the search's own threads come first: this thread only (Linux)
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        while True:
            build, entry, data = self.jobs.get()
            try:
                if entry is _DONE:
                    self._finish(build)
                    continue
                with self.lock:
                    self.queued -= entry.weight if isinstance(entry, Filed) else len(data)
                if isinstance(entry, Filed):
                    build.writer.file(entry)
                else:
                    build.add(entry, data)
            except Exception:  # never fatal: the objects stay unindexed and are read next time
                log.warning("indexing for a search failed; its objects are read again next time", exc_info=True)
                build.writer.discard()
                if entry is _DONE:
                    self._done()

    def _done(self) -> None:
        with self.lock:
            self.pending -= 1
            if self.pending == 0:
                self.idle.set()

    def _finish(self, build: Build) -> None:
        try:
            build.backfill()
            data = build.writer.seal()
            if data is not None:
                name = f"{self.id}.{hashlib.sha256(data).hexdigest()[:32]}.db"
                with contextlib.suppress(FileExistsError):
                    self.store.write(f"{FOLDER}/{name}", data)
                self._adopt(name, data, build)
                self.stats.count(segments_written=1, objects_indexed=build.writer.count)
            if build.forgotten and data is not None:
                self.stats.count(segments_dropped=len(build.forgotten))
                self.store.delete(*(f"{FOLDER}/{name}" for name in build.forgotten))
        finally:
            self._done()


@dataclass
class Narrowed:
    """One search's use of the index: which files to read, and what it reads indexed on the side."""

    index: MountIndex
    build: Build
    reading: list[Entry]
    unknown: set[str] = field(default_factory=set)
    """Paths (mount-relative) of the files the index does not know at their version: indexed once read."""

    def saw(self, entry: Entry, data: bytes) -> None:
        if entry.target.rel in self.unknown:
            self.index.offer(self.build, entry, data)

    def finish(self) -> None:
        for known in self.build.carried:
            self.index.offer(self.build, known)
        self.index.close_build(self.build)


class Indexes:
    """The server's indexes, one per object-store mount, over its state store."""

    def __init__(self, vfs: JailedFS) -> None:
        self.vfs = vfs
        self.stats = Stats()
        self.mounts: dict[str, MountIndex] = {}
        self.lock = threading.Lock()

    def of(self, mount: Mount) -> MountIndex:
        with self.lock:
            found = self.mounts.get(mount.url)
            if found is None:
                from vfs_mcp import changes  # the state store is the change log's: loaded with the first index

                found = self.mounts[mount.url] = MountIndex(changes.log_of(self.vfs).store, mount, self.stats)
                listeners = self.vfs.kept.made(changes.MADE, list)
                if self.made not in listeners:
                    listeners.append(self.made)
            return found

    def made(self, steps: Sequence[Any], versions: Mapping[tuple[str, str], str]) -> None:
        """A change was made through this server: the files it wrote whole, bytes at hand, are
        known to the index of their mount without a read (``changes.MADE``)."""
        from vfs_mcp.changes import FileImage, Put, Restore

        for step in steps:
            index = self.mounts.get(step.target.mount.url) if isinstance(step, (Put, Restore)) else None
            if index is None or not indexable(step.target):
                continue  # before the bytes are looked at: an edit's pieces are joined only for an index
            if isinstance(step, Put) and step.data is not None:
                if len(step.data) > MAX_INDEXED_BYTES:
                    continue
                data = step.data if isinstance(step.data, bytes) else step.data.joined()
            elif isinstance(step, Restore) and isinstance(step.image, FileImage) and step.image.data is not None:
                data = step.image.data
            else:
                continue
            try:
                index.wrote(step.target, data, versions.get((step.target.mount.url, step.target.rel)))
            except Exception:  # never fatal to the change: the next search reads the object
                log.warning("the search index could not note a write", exc_info=True)

    def settle(self, timeout: float = 60.0) -> bool:
        return all(index.settle(timeout) for index in list(self.mounts.values()))


def _unquoted(token: str | None) -> str | None:
    """A version token as listings and writes both spell it (an ETag's quotes are not part of it)."""
    return token.strip('"') if token else None


def indexes(vfs: JailedFS) -> Indexes | None:
    """The server's indexes (made at first use), or None when ``--no-index`` turned them off."""
    found = vfs.kept.made(INDEXES, lambda: Indexes(vfs.shared))
    return found if isinstance(found, Indexes) else None


def indexable(target: Target) -> bool:
    """Whether a search below ``target`` uses the index: an object store with ETags. Under review
    too: the store's objects show with their ETags (an MD5 of their bytes, so an entry holds for
    whatever path the view shows it at); the layer's files show with their blob's sha256, which is
    no version the index keeps, so they are read every time (from the state store)."""
    capabilities = target.mount.capabilities
    return capabilities.etags and not capabilities.local_io


def plan(vfs: JailedFS, root: Target, files: Sequence[Entry], query: GrepQuery) -> Narrowed | None:
    """Which of ``files`` (the listing of a search below ``root``, in order) to read: all but
    those the index shows cannot match. None when the index is off or fails (read them all)."""
    found = indexes(vfs)
    if found is None or not indexable(root):
        return None
    try:
        whole = root.is_root and not (query.include or query.exclude or query.max_depth)
        return _plan(vfs, found, root, files, needed(query.pattern, is_regex=query.is_regex), whole)
    except Exception as err:  # the state store is never fatal: the search reads everything
        log.warning("the search index could not be used (%s); reading every object", err)
        return None


def _plan(
    vfs: JailedFS, found: Indexes, root: Target, files: Sequence[Entry], need: AllOf | None, whole: bool
) -> Narrowed:
    index = found.of(root.mount)
    segments = index.refresh()
    versions = [index.version(entry) for entry in files]
    forgotten = _forgotten(segments, files, versions, whole)
    kept = [s for s in segments if s.name not in forgotten]
    build = Build(index, vfs, [s.name for s in segments if s.name in forgotten])
    expression = fts_query(need) if need is not None else None
    matched: dict[str, set[int]] = {}
    unknown: set[str] = set()
    reading: list[Entry] = []
    skipped = saved = 0
    for entry, version in zip(files, versions, strict=True):
        rel = entry.target.rel
        recalled = index.recalled(rel, version, entry.size)
        if recalled is not None:  # written through this server since the last segment
            build.carried.append(recalled)
            if recalled.text is None or (need is not None and not holds(need, recalled.text)):
                skipped, saved = skipped + 1, saved + entry.size
            else:
                reading.append(entry)
            continue
        hit = _known(kept, rel, version, entry.size)
        if hit is None:
            unknown.add(rel)
            reading.append(entry)
            continue
        segment, (rowid, kind) = hit
        if kind == BINARY:
            skipped, saved = skipped + 1, saved + entry.size
            continue
        if expression:
            if segment.name not in matched:
                matched[segment.name] = segment.matching(expression)
            if rowid not in matched[segment.name]:
                skipped, saved = skipped + 1, saved + entry.size
                continue
        reading.append(entry)
    index.stats.count(
        searches=1,
        narrowed=int(bool(expression)),
        objects_skipped=skipped,
        bytes_saved=saved,
        objects_read=len(reading),
    )
    return Narrowed(index, build, reading, unknown)


def _known(segments: list[Segment], rel: str, version: str | None, size: int) -> tuple[Segment, tuple[int, int]] | None:
    if version is None:
        return None
    for segment in segments:
        hit = segment.lookup(rel, version, size)
        if hit is not None:
            return segment, hit
    return None


def _forgotten(
    segments: list[Segment], files: Sequence[Entry], versions: Sequence[str | None], whole: bool
) -> set[str]:
    """Segments to compact away: all but the largest past ``MAX_SEGMENTS``; on a search of the
    whole mount, also those most of whose objects have changed or gone."""
    out: set[str] = set()
    if len(segments) > MAX_SEGMENTS:
        largest = max(segments, key=lambda s: len(s.docs))
        out = {s.name for s in segments if s is not largest}
    if whole:
        for segment in segments:
            live = sum(
                1
                for entry, version in zip(files, versions, strict=True)
                if segment.lookup(entry.target.rel, version, entry.size) is not None
            )
            if live * 2 < len(segment.docs):
                out.add(segment.name)
    return out


def settle(vfs: JailedFS, timeout: float = 60.0) -> bool:
    """Wait until the segments of every search so far are written (for tests and benchmarks)."""
    found = vfs.kept.get(INDEXES)
    return found.settle(timeout) if isinstance(found, Indexes) else True


def stats_of(vfs: JailedFS) -> dict[str, int] | None:
    """The index's figures for ``vfs://metrics`` (None before its first use or when off)."""
    found = vfs.kept.get(INDEXES)
    return found.stats.as_dict() if isinstance(found, Indexes) else None


def iter_segments(vfs: JailedFS) -> Iterator[Segment]:
    found = vfs.kept.get(INDEXES)
    if isinstance(found, Indexes):
        for index in list(found.mounts.values()):
            yield from list(index.segments.values())
