"""The content index of an object-store mount: which files a grep needs to read, never stale.

A grep over an object store lists the prefix and, without an index, reads every object. With
one, the listing's ETag of each object is looked up: an object indexed at that ETag and size
is read only if the index says it may match (it holds every trigram the pattern needs,
``trigrams.needed``); an object new or changed since is read, searched, and indexed on the side.
Every match is still found on the bytes read, so the answer (matches, order, context, limits,
counts, notes) is the full scan's; a pattern with no literal of three characters reads
everything, as before. Writes through the server and behind its back change the ETag: the next
search reads those objects again.

Storage. Postings are SQLite FTS5 tables (``tokenize='trigram'``, ``content=''``: no copy of the
text, ``detail=none``: document ids only, no positions), the well-kept library that Python
already ships: delta-coded posting lists in a B-tree, an integrity check of its own, nothing to
install. A segment is one SQLite file: the FTS5 table and the ``docs`` it indexed (key, ETag,
size, whether binary). Segments are immutable and live in the state store as
``index/<mount id>.<sha256>.db``, so every replica sharing the store shares them: a new segment
is written once (a PUT) by the search that read new objects, and a replica downloads a segment
once (a GET) and keeps it in a private folder. A segment whose bytes do not hash to its name,
that SQLite's ``quick_check`` refuses, or of another format or mount, is deleted and its
objects are read and indexed again: an index is never trusted beyond its checks. An object's
bytes are indexed only when their MD5 equals the ETag the listing gave (S3's ETag of a single
PUT): bytes written between the listing and the read are never filed under the old ETag.
Objects whose ETag is no MD5 (multipart uploads, SSE-KMS) are read by every search.

Bounds. An object over ``MAX_INDEXED_BYTES`` is not indexed (read each time); binary ones are
filed as binary (a grep skips them, so they are never read again). The index holds 7 % of the
source text it indexes, about half for random words (docs/s3.md has the figures). Building costs at most ``QUEUE_BYTES`` of
queued bytes: a search hands what it read to one indexing thread and never waits for it; what
does not fit is fetched again by that thread after the search (``backfill``). Searching loads
each segment's ``docs`` (about 100 bytes an object) and asks FTS5 for document ids. Segments
are compacted by forgetting: past ``MAX_SEGMENTS``, or when a search of the whole mount finds
most of a segment's objects changed, the search treats the segment's objects as new, reads
and indexes them into its own segment, and deletes the old one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import shutil
import sqlite3
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.search.query import GrepQuery
from vfs_mcp.ops.search.trigrams import AllOf, fold, fts_query, needed
from vfs_mcp.ops.search.utf8_view import as_searched
from vfs_mcp.ops.text.encoding import looks_binary
from vfs_mcp.sessions import Slot

if TYPE_CHECKING:
    from vfs_mcp.changes.state import StateStore

log = logging.getLogger("vfs_mcp")

FORMAT = "1"
FOLDER = "index"
INDEXES: Slot[Indexes | bool] = Slot("the content indexes")
"""Where a ``JailedFS`` keeps the server's ``Indexes``; False there turns the index off (``--no-index``)."""
MAX_INDEXED_BYTES = 4 << 20
QUEUE_BYTES = 64 << 20
MAX_SEGMENTS = 8
BACKFILL_WIDTH = 8
TEXT, BINARY = 0, 1
_SCHEMA = (
    "CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE docs(id INTEGER PRIMARY KEY, key TEXT, etag TEXT, size INTEGER, kind INTEGER)",
    "CREATE VIRTUAL TABLE grams USING fts5(text, tokenize='trigram case_sensitive 1', content='', detail=none)",
)


@dataclass
class Stats:
    """What the index did, for ``vfs://metrics``."""

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

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class Segment:
    """One immutable SQLite file of the index, open read-only, and the objects it indexed."""

    def __init__(self, name: str, path: str, mount_id: str) -> None:
        self.name = name
        self.path = path
        self.db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        self.lock = threading.Lock()
        try:
            if self.db.execute("PRAGMA quick_check").fetchone() != ("ok",):
                raise ValueError("quick_check failed")
            meta = dict(self.db.execute("SELECT name, value FROM meta").fetchall())
            if meta.get("format") != FORMAT or meta.get("mount") != mount_id:
                raise ValueError("another format or mount")
            self.docs: dict[str, tuple[str, int, int, int]] = {
                str(key): (str(etag), int(size), int(rowid), int(kind))
                for rowid, key, etag, size, kind in self.db.execute("SELECT id, key, etag, size, kind FROM docs")
            }
        except Exception:
            self.db.close()
            raise

    def lookup(self, entry: Entry) -> tuple[int, int] | None:
        """(document id, kind) of ``entry`` when this segment indexed it at its ETag and size."""
        found = self.docs.get(entry.target.rel)
        if found is None or found[0] != entry.etag or found[1] != entry.size:
            return None
        return found[2], found[3]

    def matching(self, expression: str) -> set[int]:
        with self.lock:
            return {row[0] for row in self.db.execute("SELECT rowid FROM grams WHERE grams MATCH ?", (expression,))}

    def close(self) -> None:
        with self.lock:
            self.db.close()


class Build:
    """The segment one search writes: the objects it read that the index did not know."""

    def __init__(self, index: MountIndex, vfs: JailedFS, forgotten: list[str]) -> None:
        self.index = index
        self.vfs = vfs
        self.forgotten = forgotten
        self.left: list[Entry] = []
        """Objects that did not fit the queue: fetched again after the search."""
        self.path = os.path.join(index.folder, f"build-{os.urandom(8).hex()}.db")
        self.db: sqlite3.Connection | None = None
        self.count = 0

    def add(self, entry: Entry, data: bytes) -> None:
        """Index ``data``, the bytes of ``entry`` (on the indexing thread)."""
        etag = (entry.etag or "").lower()
        if len(etag) != 32 or hashlib.md5(data, usedforsecurity=False).hexdigest() != etag:
            return  # not the bytes the listing named (changed since), or an ETag that is no MD5
        if self.db is None:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            for pragma in ("journal_mode=OFF", "synchronous=OFF"):
                self.db.execute(f"PRAGMA {pragma}")
            for statement in _SCHEMA:
                self.db.execute(statement)
            self.db.execute("BEGIN")
        kind = BINARY if looks_binary(data) else TEXT
        self.count += 1
        self.db.execute(
            "INSERT INTO docs(id, key, etag, size, kind) VALUES (?, ?, ?, ?, ?)",
            (self.count, entry.target.rel, entry.etag, entry.size, kind),
        )
        if kind == TEXT and data:
            text = fold(as_searched(data).decode("utf-8"))
            self.db.execute("INSERT INTO grams(rowid, text) VALUES (?, ?)", (self.count, text))

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

    def seal(self) -> bytes | None:
        """The finished segment's bytes (None when it indexed nothing)."""
        if self.db is None:
            return None
        db = self.db
        self.db = None
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("mount", self.index.id)])
        db.execute("INSERT INTO grams(grams) VALUES ('optimize')")
        db.execute("COMMIT")
        db.execute("VACUUM")
        db.close()
        with open(self.path, "rb") as file:
            data = file.read()
        os.unlink(self.path)
        return data

    def discard(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


_DONE = object()


class MountIndex:
    """The index of one mount, its segments shared through the state store."""

    def __init__(self, store: StateStore, mount: Mount, stats: Stats) -> None:
        self.store = store
        self.id = hashlib.sha256(mount.url.encode()).hexdigest()[:24]
        self.stats = stats
        self.folder = tempfile.mkdtemp(prefix="vfs-mcp-index-")  # private (0700): downloads and builds
        self.segments: dict[str, Segment] = {}
        self.lock = threading.Lock()
        self.jobs: queue.Queue[tuple[Build, Any, Any]] = queue.Queue()
        self.queued = 0
        self.idle = threading.Event()
        self.idle.set()
        self.pending = 0
        threading.Thread(target=self._work, name="vfs-mcp-index", daemon=True).start()
        weakref.finalize(self, shutil.rmtree, self.folder, True)

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
            self.stats.segments_dropped += 1
            with contextlib.suppress(OSError):
                self.store.delete(f"{FOLDER}/{name}")
            if not local:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            return None

    def _adopt(self, name: str, data: bytes) -> None:
        """Open the segment this process just wrote, so that it is not downloaded again."""
        local = self.store.host_folder
        path = os.path.join(local, FOLDER, name) if local else os.path.join(self.folder, name)
        if not local:
            with open(path, "wb") as file:
                file.write(data)
        with self.lock:
            if name not in self.segments:
                self.segments[name] = Segment(name, path, self.id)

    # -- building, on one thread of its own ------------------------------------------------

    def offer(self, build: Build, entry: Entry, data: bytes) -> None:
        """Index ``data`` on the side: queued, or left for the backfill when the queue is full."""
        if len(data) > MAX_INDEXED_BYTES:
            return
        with self.lock:
            if self.queued + len(data) > QUEUE_BYTES:
                build.left.append(entry)
                return
            self.queued += len(data)
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
        while True:
            build, entry, data = self.jobs.get()
            try:
                if entry is _DONE:
                    self._finish(build)
                else:
                    with self.lock:
                        self.queued -= len(data)
                    build.add(entry, data)
            except Exception:  # never fatal: the objects stay unindexed and are read next time
                log.warning("indexing for a search failed; its objects are read again next time", exc_info=True)
                build.discard()
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
            data = build.seal()
            if data is not None:
                name = f"{self.id}.{hashlib.sha256(data).hexdigest()[:32]}.db"
                with contextlib.suppress(FileExistsError):
                    self.store.write(f"{FOLDER}/{name}", data)
                self._adopt(name, data)
                self.stats.segments_written += 1
                self.stats.objects_indexed += build.count
            if build.forgotten and data is not None:
                self.stats.segments_dropped += len(build.forgotten)
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
    """Paths (mount-relative) of the files the index does not know at their ETag: indexed once read."""

    def saw(self, entry: Entry, data: bytes) -> None:
        if entry.target.rel in self.unknown:
            self.index.offer(self.build, entry, data)

    def finish(self) -> None:
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
            return found

    def settle(self, timeout: float = 60.0) -> bool:
        return all(index.settle(timeout) for index in list(self.mounts.values()))


def indexes(vfs: JailedFS) -> Indexes | None:
    """The server's indexes (made at first use), or None when ``--no-index`` turned them off."""
    found = vfs.kept.made(INDEXES, lambda: Indexes(vfs))
    return found if isinstance(found, Indexes) else None


def indexable(target: Target) -> bool:
    """Whether a search below ``target`` uses the index: an object store with ETags, no review layer."""
    capabilities = target.mount.capabilities
    return capabilities.etags and not capabilities.local_io and target.mount.backend.layer is None


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
    stats = index.stats
    stats.searches += 1
    forgotten = _forgotten(segments, files, whole)
    kept = [s for s in segments if s.name not in forgotten]
    expression = fts_query(need) if need is not None else None
    matched: dict[str, set[int]] = {}
    unknown: set[str] = set()
    reading: list[Entry] = []
    skipped = saved = 0
    if expression:
        stats.narrowed += 1
    for entry in files:
        hit = _known(kept, entry)
        if hit is None:
            unknown.add(entry.target.rel)
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
    stats.objects_skipped += skipped
    stats.bytes_saved += saved
    stats.objects_read += len(reading)
    return Narrowed(index, Build(index, vfs, [s.name for s in segments if s.name in forgotten]), reading, unknown)


def _known(segments: list[Segment], entry: Entry) -> tuple[Segment, tuple[int, int]] | None:
    for segment in segments:
        hit = segment.lookup(entry)
        if hit is not None:
            return segment, hit
    return None


def _forgotten(segments: list[Segment], files: Sequence[Entry], whole: bool) -> set[str]:
    """Segments to compact away: all but the largest past ``MAX_SEGMENTS``; on a search of the
    whole mount, also those most of whose objects have changed or gone."""
    out: set[str] = set()
    if len(segments) > MAX_SEGMENTS:
        largest = max(segments, key=lambda s: len(s.docs))
        out = {s.name for s in segments if s is not largest}
    if whole:
        for segment in segments:
            live = sum(1 for entry in files if segment.lookup(entry) is not None)
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
