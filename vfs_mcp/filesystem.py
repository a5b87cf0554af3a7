"""The jailed filesystem the operations see: fsspec's verbs over user paths.

Every method takes user paths (or Targets from ``resolve``), goes through the jail, runs
the store call under ``guard`` (the one place foreign errors are translated), and names
results the way the user addresses the mount. Operations never touch a store directly.

Every mount's store is an fsspec filesystem, local folders included
(``vfs_mcp_backends.localfs``). This class holds policy only: what differs between stores is
a declared capability (``Mount.capabilities``), and ``host_path`` is the one way to ask for a
host path. Writes are staged and committed in one step, after a last check that the call
is still wanted (``commit_scope``: a call that timed out never changes anything afterwards).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from vfs_mcp import journal
from vfs_mcp.entries import Digest
from vfs_mcp.entries import Entry as Entry
from vfs_mcp.entries import Found as Found
from vfs_mcp.entries import sha256 as sha256
from vfs_mcp.entries import sha256_aside as sha256_aside
from vfs_mcp.errors import (
    AccessDenied,
    AlreadyExists,
    IsADirectory,
    NotADirectory,
    NotFound,
    Stale,
)
from vfs_mcp.jail import Target
from vfs_mcp.reads import JailedReads
from vfs_mcp_backends import PreconditionFailed, ensure_wanted
from vfs_mcp_backends import commit_scope as commit_scope  # re-exported: the tooling layer runs calls in it


@dataclass(frozen=True)
class _Expected:
    """What a checked write expects to find: a sha256, a ``version``, or the bytes read before."""

    sha256: str | None = None
    version: tuple[Any, ...] | None = None
    content: bytes | None = None

    @property
    def any(self) -> bool:
        return self.sha256 is not None or self.version is not None or self.content is not None


APPEND_RETRIES = 8
"""Tries of an append that meets concurrent writers on an object store (each reads again)."""
_held: ContextVar[frozenset[tuple[int, str]]] = ContextVar("vfs_mcp_exclusive", default=frozenset())
"""The paths whose ``exclusive`` lock the current call holds."""


class JailedFS(JailedReads):
    """One client's view: the jail (mounts, working directory) and the verbs over it
    (reading in ``reads.JailedReads``, writing, moving and copying here)."""

    # -- writing ----------------------------------------------------------------------

    def remember(self, target: Target, entry: Entry | None = None, content: bytes | None = None) -> None:
        """Keep ``target``'s before-image for undo when the running call is being recorded
        (``vfs_mcp.journal``): a folder's files one by one, a file's bytes and mode, or absence.
        ``entry``: its metadata when the caller has it (a walk's); ``content``: a file's bytes
        when the caller has just read them under the write lock."""
        if not journal.touched((target.mount.url, target.rel)):
            return
        if entry is None:
            try:
                entry = self.info(target, follow=False)
            except (NotFound, NotADirectory):
                entry = None
        if entry is not None and entry.type == "directory":
            for inner in self.find(target):
                if inner.type == "file":
                    self.remember(inner.target, inner)
            return
        is_file = entry is not None and entry.type == "file"
        mode = entry.mode if entry is not None else None

        def read() -> tuple[bytes | None, int | None]:
            if not is_file:
                return None, None
            return (self.cat(target) if content is None else content), mode

        size = entry.size if entry is not None and is_file else 0
        journal.remember((target.mount.url, target.rel), target.display, size, read)

    def write(
        self,
        target: Target,
        data: bytes,
        *,
        append: bool = False,
        create_dirs: bool = False,
        expected_hash: str | None = None,
        expected_version: tuple[Any, ...] | None = None,
        expected_content: bytes | None = None,
        create_only: bool = False,
        digest: Digest | None = None,
    ) -> bool:
        """Write a whole file (staged, then committed in one step) or append; returns whether it existed.

        The check and the write are one step for every other writer (see ``exclusive``):
        CONFLICT (``Stale``) when ``expected_hash`` (sha256 hex of the current content),
        ``expected_version`` (from ``version``) or ``expected_content`` (the bytes read
        before) no longer holds, ALREADY_EXISTS with ``create_only`` when something is
        there. An append that meets a concurrent write on an object store reads again and
        retries. ``digest``: the sha256 of ``data``, when the caller has it (or has it hashed meanwhile).
        """
        expected = _Expected(expected_hash, expected_version, expected_content)
        for attempt in range(APPEND_RETRIES):
            try:
                with self.exclusive(target):
                    return self._write_checked(target, data, append, create_dirs, expected, create_only, digest)
            except Stale:
                if not append or expected.any or attempt == APPEND_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def exclusive(self, target: Target) -> Iterator[None]:
        """Hold off the other writers of ``target`` while a read-check-write runs (across
        processes on stores with ``locked_writes``; object stores add conditional puts).
        Taken again inside itself (an edit's read, then its write), it is already held.
        """
        key = (id(target.mount.fs), target.fs_path)
        held = _held.get()
        if key in held:
            yield
            return
        with self.guard(target), target.mount.backend.exclusive(target.fs_path):
            reset = _held.set(held | {key})
            try:
                yield
            finally:
                _held.reset(reset)

    def _write_checked(
        self,
        target: Target,
        data: bytes,
        append: bool,
        create_dirs: bool,
        expected: _Expected,
        create_only: bool,
        digest: Digest | None,
    ) -> bool:
        mount = target.mount
        existing = self._existing_file(target)
        if create_only and existing is not None:
            raise AlreadyExists(f"{target.display} already exists")
        if expected.version is not None and (existing is None or self.version(target, existing) != expected.version):
            raise Stale(f"{target.display} changed since it was read; read it again")
        if expected.sha256 is not None:
            current = self.digest(target) if existing else ""
            if current != expected.sha256.lower():
                raise Stale(f"{target.display} changed since it was read (sha256 differs); read it again")
        if expected.content is not None and (existing is None or self.cat(target) != expected.content):
            raise Stale(f"{target.display} changed since it was read; read it again")
        self.remember(target, content=expected.content)
        if existing is None:
            self._ensure_parent(target, create_dirs)
        checked = create_only or append or expected.any
        if mount.capabilities.conditional_writes and checked and (existing is None or existing.token):
            content = self.cat(target) + data if append and existing is not None else data
            self.put_if(target, content, existing, digest if content is data else None)
        elif not (append and existing is not None):
            self.put(target, data, digest=digest)
        elif mount.capabilities.append:
            with self.guard(target):
                self._commit(target, mount.fs._open(target.fs_path, "ab", autocommit=False), [data])
        else:
            self.put(target, self._then(self.chunks(target), data))
        return existing is not None

    def put_if(self, target: Target, content: bytes, existing: Entry | None, digest: Digest | None = None) -> None:
        """One conditional put, on stores with ``conditional_writes``: lands only if the object
        is still ``existing`` (by its token), or with ``existing=None`` if it is still absent;
        else CONFLICT (``Stale``) or ALREADY_EXISTS. ``digest``: ``content``'s sha256, if known."""
        mount = target.mount
        self.remember(target)
        with self.guard(target):
            ensure_wanted()
            try:
                token = existing.token if existing is not None else None
                mount.backend.put_if(target.fs_path, content, if_match=token, create_only=existing is None)
                self._wrote(len(content))
                self._settled(target, content, digest)
            except PreconditionFailed:
                if existing is None:
                    raise AlreadyExists(f"{target.display} was created by someone else meanwhile") from None
                raise Stale(f"{target.display} changed since it was read; read it again") from None
            finally:
                mount.backend.invalidate(target.fs_path)

    @staticmethod
    def _then(first: Iterator[bytes], last: bytes) -> Iterator[bytes]:
        yield from first
        yield last

    def put(
        self,
        target: Target,
        content: bytes | Iterable[bytes],
        *,
        follow: bool = True,
        permissions: int | None = None,
        digest: Digest | None = None,
    ) -> None:
        """Write ``content`` (bytes, or chunks of them) as the whole new content of ``target``,
        visible at once when all is written: the old content stays until then, and a failure
        leaves it. ``follow=False``: a link at ``target`` is replaced, never written through.
        ``permissions``: the mode, where the store has modes (default: the old file's).
        ``digest``: the sha256 of bytes ``content``, when the caller has it.
        """
        mount = target.mount
        self.remember(target)
        options: dict[str, Any] = {}
        if mount.capabilities.symlinks:
            options["follow"] = follow
        if mount.capabilities.modes and permissions is not None:
            options["permissions"] = permissions
        with self.guard(target):
            if isinstance(content, bytes):
                ensure_wanted()
                mount.fs.pipe_file(target.fs_path, content, **options)  # one put; local disks stage it
                self._wrote(len(content))
                self._settled(target, content, digest)
            else:
                # _open, not open: fsspec's open files a staged file in a transaction list it never empties.
                self._commit(target, mount.fs._open(target.fs_path, "wb", autocommit=False, **options), content)
            mount.backend.invalidate(target.fs_path)

    @staticmethod
    def _settled(target: Target, content: bytes, digest: Digest | None) -> None:
        """Tell undo's record what a write left at ``target``, so it need not read it back."""
        key = (target.mount.url, target.rel)
        if journal.recorded(key):
            journal.wrote(key, digest() if digest is not None else sha256(content))

    def _commit(self, target: Target, handle: Any, chunks: Iterable[bytes]) -> None:
        try:
            for chunk in chunks:
                handle.write(chunk)
                self._wrote(len(chunk))
            handle.close()
            self.before_commit(target)
            handle.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                handle.discard()
            raise

    def _existing_file(self, target: Target) -> Entry | None:
        try:
            return self.require_file(target)
        except NotFound:
            return None

    def _ensure_parent(self, target: Target, create_dirs: bool) -> list[Target]:
        """Make sure ``target``'s parent is a directory; returns the directories created."""
        if target.is_root:
            raise IsADirectory(f"{target.display} is a mount root")
        parent = target.parent()
        try:
            self.require_dir(parent)
        except NotFound:
            if not create_dirs:
                raise NotFound(
                    f"parent directory {parent.display} does not exist; pass create_dirs=true or create it first"
                ) from None
            return self.make_dirs(parent)
        return []

    def mkdir(self, target: Target, *, parents: bool = True, exist_ok: bool = True) -> bool:
        """Create a directory; returns False when it already existed."""
        try:
            entry = self.info(target)
        except NotFound:
            entry = None
        if entry is not None:
            if entry.type != "directory":
                raise AlreadyExists(f"{target.display} exists and is not a directory")
            if not exist_ok:
                raise AlreadyExists(f"{target.display} already exists")
            return False
        if not parents:
            self.require_dir(target.parent())
        self.make_dirs(target)
        return True

    def make_dirs(self, target: Target) -> list[Target]:
        """Create ``target`` and its missing ancestors (top down); returns the ones created."""
        missing: list[Target] = []
        at = target
        while not at.is_root:
            try:
                entry = self.info(at)
            except NotFound:
                missing.append(at)
                at = at.parent()
                continue
            if entry.type != "directory":
                raise AlreadyExists(f"{at.display} exists and is not a directory")
            break
        created: list[Target] = []
        for one in reversed(missing):
            self.make_dir(one)
            created.append(one)
        return created

    def make_dir(self, target: Target) -> None:
        """Create one directory whose parent exists."""
        mount = target.mount
        with self.guard(target):
            self.before_commit(target)
            if mount.capabilities.empty_dirs:
                mount.fs.mkdir(target.fs_path, create_parents=False)
            else:
                # Object stores have no directories: a "key/" marker object stands for one.
                mount.fs.pipe_file(target.fs_path.rstrip("/") + "/", b"")
            mount.backend.invalidate(target.fs_path)

    def rm(self, target: Target, *, recursive: bool = False) -> Entry:
        """Delete a file, a link (never its target) or a directory tree; never a mount root."""
        if target.is_root:
            raise AccessDenied(f"{target.display} is a mount root and cannot be deleted")
        entry = self.info(target, follow=False)
        mount = target.mount
        self.remember(target)
        with self.guard(target):
            if entry.type == "directory" and not recursive and self._raw_children(target):
                raise AlreadyExists(f"{target.display} is a directory that is not empty; pass recursive=true")
            self.before_commit(target)
            if entry.type != "directory":
                mount.fs.rm_file(target.fs_path)
            elif recursive:
                mount.fs.rm(target.fs_path, recursive=True)
            elif mount.capabilities.empty_dirs:
                mount.fs.rmdir(target.fs_path)
            else:
                with contextlib.suppress(FileNotFoundError):
                    mount.fs.rm_file(target.fs_path.rstrip("/") + "/")
            mount.backend.invalidate(target.fs_path)
        return entry

    def _raw_children(self, target: Target) -> list[str]:
        target.mount.backend.invalidate(target.fs_path)
        base = target.fs_path.rstrip("/")
        return [n for n in target.mount.fs.ls(target.fs_path, detail=False) if str(n).rstrip("/") != base]

    def state_after(self, target: Target) -> str | None:
        """What undo compares: the sha256 of the file at ``target``, ``journal.DIRECTORY``, or None (absent)."""
        try:
            entry = self.info(target, follow=False)
        except (NotFound, NotADirectory):
            return None
        return journal.DIRECTORY if entry.type == "directory" else self.digest(target)

    # -- moving and copying (vfs_mcp.transfers) ----------------------------------------

    def prepare_destination(self, source: Target, dest: Target, overwrite: bool, create_dirs: bool) -> Entry | None:
        """Check a move/copy destination; returns the entry it would replace, if any."""
        from vfs_mcp.transfers import prepare

        return prepare(self, source, dest, overwrite, create_dirs)[0]

    def move(self, source: Target, dest: Target, *, overwrite: bool = False) -> Entry:
        """Move or rename a file, link or directory: one rename where the store can, else a copy
        and a delete that refuses up front what the destination cannot hold (links, special
        files, modes) and leaves the source whole when the copy fails.
        """
        from vfs_mcp.transfers import move

        return move(self, source, dest, overwrite=overwrite)

    def copy(
        self, source: Target, dest: Target, *, overwrite: bool = False, recursive: bool = False, follow: bool = True
    ) -> int:
        """Copy a file or (recursive) directory, across mounts too; returns bytes copied.

        Links inside a copied tree are skipped, never followed. A copy that fails removes what
        it created. ``follow=False``: a link at ``dest`` is replaced, never written through.
        """
        from vfs_mcp.transfers import copy

        return copy(self, source, dest, overwrite=overwrite, recursive=recursive, follow=follow)
