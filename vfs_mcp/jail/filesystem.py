"""The jailed filesystem the operations see: fsspec's reading verbs over user paths (``JailedFS``).

Every method takes user paths (or Targets from ``resolve``), goes through the jail, runs
the store call under ``guard`` (the one place foreign errors are translated), and names
results the way the user addresses the mount. Operations never touch a store directly.

Every mount's store is an fsspec filesystem, local folders included
(``vfs_mcp_backends.localfs``). This class holds policy and reads only: what differs between
stores is a declared capability (``Mount.capabilities``), and ``host_path`` is the one way to
ask for a host path. Nothing here writes: every change goes through the one write path,
``vfs_mcp.changes`` (plan, lock, re-check, commit, roll back), whose store steps commit only
while the call is still wanted (``commit_scope``: a call that timed out never changes
anything afterwards), and reports the bytes it wrote through ``JailedFS.wrote``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import posixpath
import stat
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO, TypeVar, cast

from vfs_mcp.errors import (
    AccessDenied,
    Internal,
    InvalidArgument,
    IsADirectory,
    NotADirectory,
    NotFound,
    VfsError,
    translate,
)
from vfs_mcp.jail import versions
from vfs_mcp.jail.context import NO_CALL, CallContext
from vfs_mcp.jail.entries import KINDS, Entry, Found, Kind, Listing, timestamp, tree_order
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import TEMP_PREFIX, Jail, Target
from vfs_mcp.jail.tally import Counted
from vfs_mcp.jail.versions import Reads, Version
from vfs_mcp.sessions import Slots
from vfs_mcp_backends import COPY_CHUNK, Abandoned, Keep, NotRegularFile, OutsideRoot

T = TypeVar("T")


class JailedFS:
    """One client's view: the jail (mounts, working directory) and the verbs that read through
    it; changes are planned over it and committed by ``vfs_mcp.changes``. ``context``: the call
    it is the view of (``for_call``; ``NO_CALL`` on the shared filesystem)."""

    def __init__(self, jail: Jail) -> None:
        self.jail = jail
        self.kept = Slots()
        """What the server keeps for this filesystem, in its owners' slots: the operations' caches
        (line indexes), the change log, state kept outside any session (``sessions.state_of``)."""
        self.context = NO_CALL
        self.shared = self
        """This filesystem as no call sees it: what outlives a call (an index, a session's buffers) keeps it."""

    def for_call(self, context: CallContext) -> JailedFS:
        """The view one call works through: everything shared with this filesystem (the jail,
        what is kept) but ``context``, which the jail and the write path read their part of the
        call from. A new object each time, never cached (a plain object, not an fsspec
        filesystem: fsspec's instance cache never sees it); it outlives no call."""
        view = object.__new__(JailedFS)
        view.__dict__.update(self.__dict__)
        view.context = context
        return view

    def _read(self, size: int) -> None:
        tally = self.context.tally
        if tally is not None:
            tally.read += size

    def wrote(self, size: int) -> None:
        """The write path's hook: ``size`` bytes written to a store for the call this is the
        view of (its metrics, ``CallContext.tally``)."""
        tally = self.context.tally
        if tally is not None:
            tally.written += size

    def _reads(self) -> Reads | None:
        """The call's reads while they are noted (``versions.unnoted``); None: nothing to note."""
        reads = self.context.reads
        return reads if reads is not None and reads.noted else None

    @property
    def mounts(self) -> list[Mount]:
        return self.jail.mounts

    def served(self, url: str) -> Mount:
        """The mount served as ``url`` (``Jail.served``)."""
        return self.jail.served(url)

    def resolve(self, path: str, *, follow: bool = True, write: bool = False) -> Target:
        return self.jail.resolve(path, follow=follow, write=write, written=self.context.written)

    def is_hidden(self, target: Target) -> bool:
        """Whether the deny list hides ``target`` (for results a store produced on its own)."""
        return self.jail.is_hidden(target.rel)

    @property
    def deny(self) -> tuple[str, ...]:
        """The deny patterns, as given (gitignore semantics, relative to each mount's root)."""
        return tuple(self.jail.deny)

    @property
    def cwd(self) -> Target:
        """The working directory relative paths start at (the session's, see ``Jail.cwd``)."""
        return self.jail.cwd

    def chdir(self, target: Target) -> None:
        """Make the directory ``target`` the working directory."""
        self.require_dir(target)
        self.jail.chdir(target)

    def guard(self, target: Target | str) -> Translating:
        """Translate any foreign exception raised inside into our error tree."""
        return Translating(target)

    def host_path(self, target: Target) -> str | None:
        """The real host path of ``target`` on stores that have host paths (ripgrep, watchers),
        links inside the mount resolved and checked; None on the others.
        """
        with self.guard(target):
            return target.mount.backend.host_path(target.fs_path)

    def canonical(self, target: Target) -> Target:
        """``target`` with the links inside its mount resolved (itself on stores without links)."""
        if not target.mount.capabilities.symlinks:
            return target
        real = self.host_path(target)
        if real is None:  # a store whose links are its own (a mount under review): it resolves them
            with self.guard(target):
                real = target.mount.backend.resolve_links(target.fs_path, True)
            root = target.mount.real_root.rstrip("/")
            if real != root and not real.startswith(root + "/"):
                raise AccessDenied(f"{target.display} resolves outside its mount through a symbolic link; refused")
        # host_path has checked that the real path lies inside the mount's real root.
        return Target(target.mount, real[len(target.mount.real_root) :].strip("/"))

    # -- metadata ---------------------------------------------------------------------

    def info(self, target: Target, *, follow: bool = True) -> Entry:
        """Metadata of a path; NOT_FOUND if it does not exist. A mount root is a directory
        whatever the store says of its name (an object ``pre`` beside ``s3://b/pre/``).
        """
        mount = target.mount
        if target.is_root and not mount.capabilities.empty_dirs:
            # A root that is a key prefix has no metadata to look up (it was a HEAD and a listing).
            return self._entry(target, {"type": "directory"})
        reads = self._reads()
        pin = reads.pin(target) if reads is not None else None
        if pin is not None:
            return self._entry(target, self._pinned(target, pin))
        with self.guard(target):
            if not target.is_root:
                mount.backend.invalidate(target.fs_path)
            try:
                if mount.capabilities.symlinks:
                    raw = mount.fs.info(target.fs_path, follow=follow)
                else:
                    raw = mount.fs.info(target.fs_path)
            except FileNotFoundError:
                if not target.is_root:
                    raise
                raw = {"type": "directory"}
            if target.is_root and raw.get("type") != "directory":
                raw = {"type": "directory"}
            return self._entry(target, raw)

    def _entry(self, target: Target, raw: dict[str, Any]) -> Entry:
        get = raw.get  # one per entry of a walk: positional, each field looked up once
        kind: Kind = KINDS.get(str(get("type")), "file")
        etag = get("ETag") or get("etag")
        mode = get("mode")
        mount = target.mount
        return Entry(
            target,
            kind,
            int(get("size") or 0) if kind == "file" else 0,
            timestamp(get("LastModified") or get("mtime")),
            timestamp(get("created")),
            timestamp(get("atime")),
            stat.S_IMODE(mode) if isinstance(mode, int) else None,
            bool(get("islink", kind == "symlink")),
            get("nlink"),
            str(etag).strip('"') if etag else None,
            get("StorageClass"),
            mount.backend.version_token(raw) if mount.capabilities.etags else None,
            get("identity"),
        )

    def exists(self, target: Target) -> bool:
        try:
            self.info(target, follow=False)
        except NotFound:
            return False
        return True

    def lookup(self, target: Target, *, follow: bool = False) -> Entry | None:
        """``info``, or None where nothing is (a missing folder on the way included)."""
        try:
            return self.info(target, follow=follow)
        except (NotFound, NotADirectory):
            return None

    def hidden_below(self, target: Target) -> int:
        """How many entries below a folder the deny list hides (what no listing shows)."""
        found = self._walked(target, lambda path: list(target.mount.backend.entries(path)), bool)
        prefix = f"{target.rel}/" if target.rel else ""
        return sum(1 for rel, _ in found if self.jail.is_hidden(prefix + rel))

    def require_file(self, target: Target) -> Entry:
        entry = self.info(target)
        if entry.type == "directory":
            raise IsADirectory(f"{target.display} is a directory; use list_directory or directory_tree")
        if entry.type != "file":
            raise InvalidArgument(f"{target.display} is not a regular file")
        self._check_links(entry)
        return entry

    def _check_links(self, entry: Entry) -> None:
        # A hard link can share a file with a place outside the mount; the option refuses them.
        if entry.target.mount.deny_hardlinked and (entry.links or 1) > 1:
            raise AccessDenied(f"{entry.path} has other hard links; refused on this mount (deny_hardlinked)")

    def require_dir(self, target: Target) -> Entry:
        entry = self.info(target)
        if entry.type != "directory":
            raise NotADirectory(f"{target.display} is not a directory; name a directory")
        return entry

    # -- reading ----------------------------------------------------------------------

    def cat(self, target: Target, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes of a file, or of ``[start, end)``; a start past the end gives ``b""``."""
        reads = self._reads()
        if reads is not None:
            read, version = self._cat_version(target, start, end, reads.pin(target))
            reads.note(target, version)
            self._read(len(read))
            return read
        with self.guard(target):
            data: bytes = target.mount.fs.cat_file(target.fs_path, start=start, end=end)  # (s3fs: 2nd is version_id)
            self._read(len(data))
            return data

    def cat_each(
        self, files: Iterable[tuple[Target, int]], *, width: int, in_flight: int
    ) -> Generator[tuple[Target, bytes | VfsError], None, None]:
        """Each file's bytes (or the error reading it raised) in the order given, with its size
        as listed. Where each fetch waits on a network, fetched ahead: at most ``width`` files
        and ``in_flight`` bytes at once (one file at least), by the store's own event loop where
        it has one, else by threads; once the caller stops, none begins and no request of its
        goes out. On stores served by this machine (``local_io``), one after another."""
        local = all(mount.capabilities.local_io for mount in self.mounts)
        todo = iter(files)
        ahead = None if local else next(todo, None)
        pending: deque[tuple[Target, int, Future[Any], bool]] = deque()
        pool = ThreadPoolExecutor(max_workers=width)
        reads = self._reads()  # noted: each file by a thread, with its version, noted here
        loops = {} if local or reads else {id(mount.backend): mount.backend.fetches() for mount in self.mounts}
        try:
            for target, _ in todo if local else ():
                try:
                    yield target, self.cat(target)
                except VfsError as err:
                    yield target, err
            while ahead is not None or pending:
                while ahead is not None and len(pending) < width:
                    if pending and sum(p[1] for p in pending) + ahead[1] > in_flight:
                        break
                    batch = loops.get(id(ahead[0].mount.backend))  # None: by a thread
                    future: Future[Any]
                    if batch:
                        future = batch.submit(ahead[0].fs_path)
                    elif reads is not None:
                        future = pool.submit(self._cat_version, ahead[0], None, None, reads.pin(ahead[0]))
                    else:
                        future = pool.submit(self.cat, ahead[0])
                    pending.append((*ahead, future, batch is not None or reads is not None))
                    ahead = next(todo, None)
                target, _, future, counted_here = pending.popleft()
                try:
                    with self.guard(target):
                        got = future.result()
                except VfsError as err:
                    yield target, err
                    continue
                if reads is not None:  # _cat_version's pair
                    got, version = got
                    reads.note(target, version)
                data: bytes = got
                if counted_here:  # (self.cat counts its own)
                    self._read(len(data))
                yield target, data
        finally:
            for batch in filter(None, loops.values()):
                batch.stop()  # no request of this call is sent after it returns
            pool.shutdown(wait=False, cancel_futures=True)

    def read_whole(self, target: Target, limit: int) -> tuple[Entry, bytes | None]:
        """A regular file's entry, checked as ``require_file`` checks it, and its bytes when it
        holds at most ``limit`` bytes (None when it holds more; a file that grew since it was
        measured may hold more): one open on stores that offer it, an info and a cat elsewhere.
        """
        reads = self._reads()
        pin = reads.pin(target) if reads is not None else None
        if pin is not None:
            entry = self._entry(target, self._pinned(target, pin))
            return entry, self.cat(target) if entry.size <= limit else None
        try:
            with self.guard(target):
                found = target.mount.backend.read_whole(target.fs_path, limit)
        except VfsError:
            self.require_file(target)  # its error says what the path is instead
            raise
        if found is None:
            entry = self.require_file(target)
            return entry, self.cat(target) if entry.size <= limit else None
        raw, data = found
        entry = self._entry(target, raw)
        self._check_links(entry)
        if data is not None:
            self._read(len(data))
            if reads is not None:
                reads.note(target, Version.of(raw, data))
        return entry, data

    def _cat_version(
        self, target: Target, start: int | None, end: int | None, pin: str | None
    ) -> tuple[bytes, Version]:
        """Bytes of a file (``pin``: of that stored version), with the version they are of."""
        with self.guard(target):
            found = target.mount.backend.read_version(target.fs_path, start, end, pin)
            if found is None and pin is None:
                data: bytes = target.mount.fs.cat_file(target.fs_path, start=start, end=end)
                return data, Version.of({}, data)
        if found is None:
            raise self._unpinnable(target, pin)
        raw, data = found
        return data, Version.of(raw, data)

    def _pinned(self, target: Target, pin: str) -> dict[str, Any]:
        """The metadata of the stored version ``pin`` of a file (one HEAD on S3)."""
        with self.guard(target):
            found = target.mount.backend.read_version(target.fs_path, 0, 0, pin)
        if found is None:
            raise self._unpinnable(target, pin)
        return found[0]

    @staticmethod
    def _unpinnable(target: Target, pin: str | None) -> VfsError:
        return InvalidArgument(
            f"{target.display}: version {pin} cannot be read, {target.mount.url} keeps no versions of its files"
        )

    @contextlib.contextmanager
    def open_read(self, target: Target) -> Iterator[BinaryIO]:
        """A seekable binary reader that fetches only what is read (range requests on S3)."""
        reads = self._reads()
        if reads is not None:
            with self._open_noted(target, reads) as handle:
                yield handle
            return
        with self.guard(target):
            handle = target.mount.fs.open(target.fs_path, "rb", cache_type="none")
        try:
            with self.guard(target):
                yield cast(BinaryIO, Counted(handle, self._read))
        finally:
            handle.close()

    @contextlib.contextmanager
    def _open_noted(self, target: Target, reads: Reads) -> Iterator[BinaryIO]:
        """``open_read`` while a recording notes versions: the stored version pinned, read by
        ranges; else the file as it is, its ETag noted where the store gives one, else the
        sha256 of what was read."""
        pin = reads.pin(target)
        if pin is not None:
            raw = self._pinned(target, pin)
            reads.note(target, Version.of(raw))
            ranges = versions.Ranges(lambda start, end: self._cat_version(target, start, end, pin)[0], int(raw["size"]))
            handle: Any = io.BufferedReader(ranges, buffer_size=1 << 20)
        else:
            with self.guard(target):
                handle = target.mount.fs.open(target.fs_path, "rb", cache_type="none")
            details = getattr(handle, "details", None) if target.mount.capabilities.etags else None
            if details and (details.get("ETag") or details.get("etag")):
                reads.note(target, Version.of(details))
            else:
                handle = versions.Hashing(handle)
        try:
            with self.guard(target):
                yield cast(BinaryIO, Counted(handle, self._read))
        finally:
            handle.close()
        if isinstance(handle, versions.Hashing):
            reads.note(target, handle.version())

    def chunks(self, target: Target) -> Iterator[bytes]:
        """A file's content in bounded pieces (``COPY_CHUNK``), however large it is."""
        with self.open_read(target) as handle:
            while chunk := handle.read(COPY_CHUNK):
                yield chunk

    def digest(self, target: Target) -> str:
        """sha256 hex of a file's content, read in bounded pieces."""
        digest = hashlib.sha256()
        for chunk in self.chunks(target):
            digest.update(chunk)
        return digest.hexdigest()

    def version(self, target: Target, entry: Entry | None = None) -> tuple[Any, ...]:
        """What identifies one version of a file: its path, size and mtime or etag.

        ``entry``: the file's metadata when the caller has just read it (saves a lookup).
        """
        entry = entry or self.require_file(target)
        return (target.mount.url, target.rel, entry.size, entry.etag or entry.modified or entry.created)

    # -- listing ----------------------------------------------------------------------

    def ls(self, target: Target) -> list[Entry]:
        """The visible entries of a directory, sorted by name. Where folders are key prefixes
        the listing comes first (one delimiter listing: a folder with entries is there), and
        only an empty one is looked up (a file, a missing path or an empty folder)."""
        prefixed = not target.mount.capabilities.empty_dirs
        if not prefixed:
            self.require_dir(target)
        entries = []
        with self.guard(target):
            target.mount.backend.invalidate(target.fs_path)
            base = target.fs_path.rstrip("/")
            try:
                listed = target.mount.fs.ls(target.fs_path, detail=True)
            except FileNotFoundError:
                if not prefixed:
                    raise
                listed = []
            for raw in listed:
                name = str(raw["name"]).rstrip("/")
                if name and name != base:
                    entries.append(self._entry(target.child(posixpath.basename(name)), raw))
        if prefixed and not entries:
            self.require_dir(target)
        visible = [e for e in entries if not self.jail.is_hidden(e.target.rel)]
        return sorted(visible, key=lambda e: e.name)

    def find(self, target: Target, max_depth: int | None = None, *, metadata: bool = True) -> Found:
        """Every visible path below a directory in one listing where the store can (one paged
        listing on S3, not one per "directory"), in depth-first name order. Links are reported,
        never descended. ``max_depth=1`` lists direct children only. Folders that cannot be
        read are in ``skipped`` (their contents are missing). ``metadata=False``: names and
        types are all the caller needs; a store that can skip the rest does (sizes may be 0).
        """
        entries: list[Entry] = []
        skipped: list[Entry] = []
        for path, raw in self._listed(target, max_depth, metadata):
            entry = self._entry(Target(target.mount, path), raw)
            entries.append(entry)
            if raw.get("unreadable"):
                skipped.append(entry)
        return Found(sorted(entries, key=tree_order), skipped)

    def pages(
        self, target: Target, max_depth: int | None = None, *, metadata: bool = True, keep: Keep | None = None
    ) -> Iterator[Listing]:
        """What ``find`` lists, as (mount-relative path, type, size) tuples (20,000 paths stay
        tuples, without an ``Entry`` and a ``Target`` each), a page at a time where the store
        lists in pages (S3: a list request of 1,000 keys, in key order, each folder before what
        is in it), in one page elsewhere. ``keep(name, path below target)``: only the entries it
        accepts (on a local disk, only those are measured). No page is asked for once the caller
        stops. Fresh: cached listings below ``target`` are forgotten first; where folders are
        key prefixes only an empty first page is looked up (a file, a missing path or an empty
        folder)."""
        mount = target.mount
        prefixed = not mount.capabilities.empty_dirs
        if not prefixed:
            self.require_dir(target)
        with self.guard(target):
            mount.backend.invalidate_tree(target.fs_path)
            pages = mount.backend.pages(target.fs_path, max_depth, metadata, keep)
        prefix = f"{target.rel}/" if target.rel else ""
        first = True
        while True:
            with self.guard(target):
                page = next(pages, None)
            if page is None:
                return
            if first and prefixed and not page.listed:
                self.require_dir(target)
            first = False
            items = self._visible(prefix, page.items)
            yield Listing(items, [prefix + rel for rel in page.unreadable], page.last, page.listed, prefix + page.until)

    def ls_pages(
        self, folders: list[Target], cursors: list[str | None]
    ) -> list[tuple[list[tuple[str, Kind, int]], str | None]]:
        """One page of each folder's visible entries as (mount-relative path, type, size) in
        name order (a delimiter listing on object stores, all folders at once), and the cursor
        to continue that folder's listing from (None: it is complete). A folder that is gone
        lists nothing. All ``folders`` are on one mount."""
        if not folders:
            return []
        backend = folders[0].mount.backend
        with self.guard(folders[0]):
            listed = backend.ls_many([folder.fs_path for folder in folders], cursors)
        return [
            (self._visible(f"{folder.rel}/" if folder.rel else "", entries), cursor)
            for folder, (entries, cursor) in zip(folders, listed, strict=True)
        ]

    def _visible(self, prefix: str, entries: list[tuple[str, str, int]]) -> list[tuple[str, Kind, int]]:
        """``entries`` (a path below a folder, fsspec type, size) that the deny list leaves
        visible, as (mount-relative path, type, size); ``prefix`` is the folder's path."""
        hidden = self.jail.is_hidden
        if not self.jail.deny:  # only our temp files hide: asked of the paths that may be one
            return [
                (path, KINDS.get(kind, "file"), size)
                for rel, kind, size in entries
                if TEMP_PREFIX not in (path := prefix + rel) or not hidden(path)
            ]
        return [
            (path, KINDS.get(kind, "file"), size) for rel, kind, size in entries if not hidden(path := prefix + rel)
        ]

    def _walked(self, target: Target, walk: Callable[[str], T], found: Callable[[T], bool]) -> T:
        """``walk`` of a directory's store path, fresh (cached listings below it forgotten), its
        errors ours. Where folders are key prefixes, a walk that ``found`` keys shows the folder
        is there, so only an empty walk is looked up (a file, a missing path or an empty folder):
        a tree costs its listing's pages and no more requests."""
        prefixed = not target.mount.capabilities.empty_dirs
        if not prefixed:
            self.require_dir(target)
        with self.guard(target):
            target.mount.backend.invalidate_tree(target.fs_path)
            listed = walk(target.fs_path)
        if prefixed and not found(listed):
            self.require_dir(target)
        return listed

    def _listed(self, target: Target, max_depth: int | None, metadata: bool) -> Iterator[tuple[str, dict[str, Any]]]:
        """The mount-relative path and store metadata of every visible path below a directory."""
        found = self._walked(target, lambda path: list(target.mount.backend.entries(path, max_depth, metadata)), bool)
        hidden = self.jail.is_hidden
        prefix = f"{target.rel}/" if target.rel else ""
        for rel, raw in found:
            if not hidden(prefix + rel):
                yield prefix + rel, raw


class Translating:
    """``JailedFS.guard``: the one translation boundary. A class, not a generator's context
    manager: every store call of a read passes through one (a generator's costs four Python
    calls more)."""

    __slots__ = ("target",)

    def __init__(self, target: Target | str) -> None:
        self.target = target

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, trace: object) -> None:
        if isinstance(exc, Exception):
            target = self.target
            raise _translated(exc, target.display if isinstance(target, Target) else target) from exc


def _translated(exc: Exception, shown: str) -> Exception:
    """Our error for an exception raised about ``shown`` (named only once something failed)."""
    if isinstance(exc, NotRegularFile):
        return InvalidArgument(f"{shown} is not a regular file (a FIFO, socket or device); its content is never read")
    if isinstance(exc, Abandoned):
        return Internal(f"{shown} was not changed: the call was cancelled or timed out first")
    if isinstance(exc, OutsideRoot):
        return AccessDenied(f"{shown} resolves outside its mount through a symbolic link; refused")
    return translate(exc, shown)
