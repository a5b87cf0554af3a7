"""The store steps a commit is made of: each one call to a mount's store, under the one
error boundary (``JailedFS.guard``), refused once the call that makes it was given up
(``ensure_wanted``), listings cached by the store forgotten after it. Only ``commit`` calls
them, with the change's locks held and its policy and preconditions checked."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from vfs_mcp.errors import NotADirectory, NotFound, Stale
from vfs_mcp.jail.entries import Entry, Pieces
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends import PreconditionFailed, ensure_wanted
from vfs_mcp_backends.scopes import waiting


def probe(vfs: JailedFS, target: Target) -> Entry | None:
    """What is at ``target`` itself (a link is a link), or None."""
    try:
        return vfs.info(target, follow=False)
    except (NotFound, NotADirectory):
        return None


def read(vfs: JailedFS, target: Target) -> bytes:
    return vfs.cat(target)


HOLDS_CHUNK = 64 * 1024
"""Bytes compared at a time by ``holds``: small enough to come from the heap the last piece went back to."""


def holds(vfs: JailedFS, target: Target, data: bytes) -> bool:
    """Whether the file ``target`` holds exactly ``data``: on a store on this machine, read and
    compared a piece at a time, no copy of the whole file made (a file's size less at the
    change's peak; and a file of 4 MiB or more is not read into fresh mapped pages,
    ``cli.main.MMAP_THRESHOLD``, which cost more than the pieces: figures in benchmarks/README.md,
    "Figures behind the write path's choices"); elsewhere in one read."""
    if not target.mount.capabilities.local_io:
        return read(vfs, target) == data
    at = 0
    with vfs.open_read(target) as handle:
        while chunk := handle.read(HOLDS_CHUNK):
            # memcmp in place: a slice would copy the piece, a memoryview compares byte by byte (far slower)
            if not data.startswith(chunk, at):
                return False
            at += len(chunk)
    return at == len(data)


def readlink(vfs: JailedFS, target: Target) -> str:
    with vfs.guard(target):
        return str(target.mount.fs.readlink(target.fs_path))


def _options(target: Target, mode: int | None) -> dict[str, Any]:
    # Targets are canonical (links resolved when planned): a link found there now is replaced, never followed.
    options: dict[str, Any] = {}
    if target.mount.capabilities.symlinks:
        options["follow"] = False
    if target.mount.capabilities.modes and mode is not None:
        options["permissions"] = mode
    return options


def put(vfs: JailedFS, target: Target, data: bytes | Pieces, *, mode: int | None = None) -> None:
    """``data`` as the whole new content, visible in one step (local disks stage it); its
    ``Pieces`` written one after the other, on a store that stages its files (a local disk),
    else joined into one body."""
    if isinstance(data, Pieces):
        if target.mount.capabilities.host_paths:
            ensure_wanted()
            _staged(vfs, target, "wb", data, _options(target, mode))
            return
        data = data.joined()
    with vfs.guard(target):
        ensure_wanted()
        waiting()
        target.mount.fs.pipe_file(target.fs_path, data, **_options(target, mode))
        vfs.wrote(len(data))
        target.mount.backend.invalidate(target.fs_path)


def put_if(vfs: JailedFS, target: Target, data: bytes, *, token: str | None) -> str | None:
    """One conditional put on a store with conditional writes: lands only while the object
    still has ``token`` (or, with None, while nothing is there); else ``Stale``/ALREADY_EXISTS.
    The new object's version token, where the store gives one."""
    with vfs.guard(target):
        ensure_wanted()
        waiting()
        try:
            written = target.mount.backend.put_if(target.fs_path, data, if_match=token, create_only=token is None)
        except PreconditionFailed:
            # The plan is made again on what is there now (a create-only one then says ALREADY_EXISTS).
            how = "was created by someone else meanwhile" if token is None else "changed since it was read"
            raise Stale(f"{target.display} {how}") from None
        finally:
            target.mount.backend.invalidate(target.fs_path)
        vfs.wrote(len(data))
        return written


def stream(vfs: JailedFS, target: Target, chunks: Iterable[bytes], *, mode: int | None = None) -> str:
    """Chunks as the whole new content, visible in one step when all is written; their sha256."""
    digest = hashlib.sha256()

    def hashed() -> Iterator[bytes]:
        for chunk in chunks:
            digest.update(chunk)
            yield chunk

    _staged(vfs, target, "wb", hashed(), _options(target, mode))
    return digest.hexdigest()


def append(vfs: JailedFS, target: Target, data: bytes) -> None:
    """``data`` added in place at the end (stores with ``append``)."""
    _staged(vfs, target, "ab", [data], {})


def _staged(
    vfs: JailedFS, target: Target, mode: str, chunks: Iterable[bytes | memoryview] | Pieces, options: dict[str, Any]
) -> None:
    """Write ``chunks`` through the store's staged-file protocol: visible at ``commit``, never
    before; a failure (or a call given up) discards them. ``Pieces`` (all in memory) go in one
    ``writelines``: a local file writes many a system call."""
    with vfs.guard(target):
        # _open, not open: fsspec's open files a staged file in a transaction list it never empties.
        handle = target.mount.fs._open(target.fs_path, mode, autocommit=False, **options)
        try:
            if isinstance(chunks, Pieces):
                handle.writelines(chunks.parts)
                vfs.wrote(len(chunks))
            else:
                for chunk in chunks:
                    handle.write(chunk)
                    vfs.wrote(len(chunk))
            waiting()  # closed, a local file is fsynced
            handle.close()
            ensure_wanted()
            handle.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                handle.discard()
            raise
        target.mount.backend.invalidate(target.fs_path)


def native_copy(vfs: JailedFS, source: Target, dest: Target) -> None:
    """A copy the store makes by itself (server-side on S3): no bytes through us."""
    with vfs.guard(dest):
        ensure_wanted()
        dest.mount.fs.cp_file(source.fs_path, dest.fs_path)
        dest.mount.backend.invalidate(dest.fs_path)


def remove(vfs: JailedFS, target: Target, entry: Entry, *, recursive: bool = False) -> None:
    """Delete a file, a link or a folder (``recursive``: with what is inside)."""
    mount = target.mount
    with vfs.guard(target):
        ensure_wanted()
        if entry.type != "directory":
            mount.fs.rm_file(target.fs_path)
        elif recursive:
            mount.fs.rm(target.fs_path, recursive=True)
        elif mount.capabilities.empty_dirs:
            mount.fs.rmdir(target.fs_path)
        else:
            with contextlib.suppress(FileNotFoundError):
                mount.fs.rm_file(target.fs_path.rstrip("/") + "/")  # a folder marker, if there is one
        mount.backend.invalidate(target.fs_path)


def rename(vfs: JailedFS, source: Target, dest: Target) -> None:
    """One rename inside a store with ``atomic_rename``."""
    with vfs.guard(source):
        ensure_wanted()
        source.mount.fs.mv(source.fs_path, dest.fs_path)
        source.mount.backend.invalidate(source.fs_path)
        dest.mount.backend.invalidate(dest.fs_path)


def make_dir(vfs: JailedFS, target: Target) -> None:
    """One folder whose parent exists (a ``key/`` marker object where folders are key prefixes)."""
    mount = target.mount
    with vfs.guard(target):
        ensure_wanted()
        if mount.capabilities.empty_dirs:
            mount.fs.mkdir(target.fs_path, create_parents=False)
        else:
            mount.fs.pipe_file(target.fs_path.rstrip("/") + "/", b"")
        mount.backend.invalidate(target.fs_path)


def symlink(vfs: JailedFS, target: Target, points_to: str) -> None:
    with vfs.guard(target):
        ensure_wanted()
        target.mount.fs.symlink(points_to, target.fs_path)
        target.mount.backend.invalidate(target.fs_path)


def chmod(vfs: JailedFS, target: Target, mode: int) -> None:
    with vfs.guard(target):
        target.mount.fs.chmod(target.fs_path, mode)


def raw_tree(vfs: JailedFS, target: Target) -> Iterator[tuple[str, dict[str, Any]]]:
    """Everything below a folder as the store has it (what the deny list hides included):
    (path below it, store metadata), depth-first, links never followed."""
    with vfs.guard(target):
        target.mount.backend.invalidate_tree(target.fs_path)
        found = list(target.mount.backend.entries(target.fs_path))
    found.sort(key=lambda item: item[0].replace("/", "\x00"))
    yield from found
