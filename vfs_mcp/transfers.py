"""Copies and moves, within a mount and between mounts: checked up front, undone on failure.

A copy either completes or removes everything it created (a failed call changes nothing).
A move is one rename where the store can; otherwise a copy then a delete of the source,
refused before it starts when the destination cannot hold what it would carry (links,
special files, permission bits that matter), so nothing is dropped on the way.
"""

from __future__ import annotations

import contextlib
import errno
import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from vfs_mcp.errors import AccessDenied, AlreadyExists, Conflict, InvalidArgument, IsADirectory, NotFound, VfsError
from vfs_mcp.jail import MAX_PATH_CHARS, Target

if TYPE_CHECKING:
    from vfs_mcp.filesystem import Entry, Found, JailedFS

T = TypeVar("T")

CREATE_ONLY_BYTES = 64 * 1024 * 1024
"""Largest file a copy onto a new name on an object store sends as one create-only put."""
KEPT_BITS = 0o7111
"""Permission bits a file loses on a store without modes that a move must not silently drop:
execute, setuid, setgid, sticky."""


def prepare(
    vfs: JailedFS, source: Target, dest: Target, overwrite: bool, create_dirs: bool, follow: bool = True
) -> tuple[Entry | None, list[Target]]:
    """Check a move/copy destination: the entry it would replace (if any), and the parent
    directories created for it (to remove again if the transfer fails).
    """
    if dest.is_root:
        raise AlreadyExists(f"{dest.display} is a mount root")
    if source.mount is dest.mount and (dest.rel + "/").startswith(source.rel + "/"):
        raise InvalidArgument(f"{dest.display} is inside {source.display}; choose a destination outside it")
    try:
        existing = vfs.info(dest, follow=follow)
    except NotFound:
        return None, vfs._ensure_parent(dest, create_dirs)
    if not overwrite:
        raise AlreadyExists(f"{dest.display} already exists; pass overwrite=true to replace it")
    if existing.type == "directory" and vfs._raw_children(dest):
        raise AlreadyExists(f"{dest.display} is a directory that is not empty; delete it first")
    return existing, []


def copy(vfs: JailedFS, source: Target, dest: Target, *, overwrite: bool, recursive: bool, follow: bool = True) -> int:
    entry = vfs.info(source)
    if entry.type == "directory":
        if not recursive:
            raise IsADirectory(f"{source.display} is a directory; pass recursive=true to copy it")
        items = _tree(vfs, source, dest, "copied")
        _, created = prepare(vfs, source, dest, overwrite, create_dirs=True)
        return _undoing(vfs, created, lambda: _copy_tree(vfs, source, dest, items, created))
    if entry.type != "file":
        raise InvalidArgument(f"{source.display} is not a regular file (a FIFO, socket or device); it cannot be copied")
    with vfs.exclusive(dest):  # the check and the copy are one step: one of two copies onto a new name wins
        existing, created = prepare(vfs, source, dest, overwrite, create_dirs=True, follow=follow)
        mode = entry.mode if existing is None else None  # a new file gets the source's mode, as cp gives it
        new = existing is None
        return _undoing(vfs, created, lambda: _copy_file(vfs, source, dest, permissions=mode, follow=follow, new=new))


def move(vfs: JailedFS, source: Target, dest: Target, *, overwrite: bool) -> Entry:
    if source.is_root:
        raise AccessDenied(f"{source.display} is a mount root and cannot be moved")
    entry = vfs.info(source, follow=False)
    with vfs.exclusive(dest):  # the check and the move are one step for every other writer of dest
        return _move_checked(vfs, source, dest, entry, overwrite)


def _move_checked(vfs: JailedFS, source: Target, dest: Target, entry: Entry, overwrite: bool) -> Entry:
    existing, _ = prepare(vfs, source, dest, overwrite, create_dirs=False)
    if existing is not None and (existing.type == "directory") != (entry.type == "directory"):
        raise Conflict(f"{dest.display} is a {existing.type}; cannot replace it with a {entry.type}")
    mount = source.mount
    if mount is dest.mount and mount.capabilities.atomic_rename:
        try:
            vfs.remember(source)
            vfs.remember(dest)
            with vfs.guard(source):
                vfs.before_commit(dest)
                mount.fs.mv(source.fs_path, dest.fs_path)
            return entry
        except InvalidArgument as err:
            if not isinstance(err.__cause__, OSError) or err.__cause__.errno != errno.EXDEV:
                raise
            # Another file system inside the mount: copy, then delete the source.
    items = _tree(vfs, source, dest, "moved") if entry.type == "directory" else None
    _check_carried(source, dest, [entry] if items is None else items)
    created: list[Target] = []
    if items is None:
        new = existing is None
        _undoing(vfs, created, lambda: _copy_file(vfs, source, dest, permissions=entry.mode, follow=False, new=new))
    else:
        _undoing(vfs, created, lambda: _copy_tree(vfs, source, dest, items, created))
    try:
        vfs.rm(source, recursive=True)
    except VfsError as err:
        raise _unmoved(vfs, source, dest, err, intact=existing is None and _intact(vfs, source, items)) from err
    return entry


def _intact(vfs: JailedFS, source: Target, items: Found | None) -> bool:
    """Whether ``source`` still holds all it held before a move's delete of it failed."""
    with contextlib.suppress(VfsError):
        return vfs.exists(source) and (items is None or len(vfs.find(source)) == len(items))
    return False


def _unmoved(vfs: JailedFS, source: Target, dest: Target, err: VfsError, *, intact: bool) -> VfsError:
    """The error of a copy-and-delete move whose delete failed: the copy is taken back when the
    source is whole and the destination was new; otherwise the message says where things are."""
    if intact:
        with contextlib.suppress(VfsError):
            vfs.rm(dest, recursive=True)
            return type(err)(f"{err}; nothing was moved")
    return type(err)(f"{err}; {dest.display} holds the whole copy, but {source.display} could not be deleted (fully)")


def _tree(vfs: JailedFS, source: Target, dest: Target, verb: str) -> Found:
    """Everything under ``source``, refused when some of it cannot be read or its copy's
    paths would be longer than any tool could name.
    """
    items = vfs.find(source)
    if items.skipped:
        names = ", ".join(e.path for e in items.skipped[:3])
        raise AccessDenied(
            f"{source.display} holds {len(items.skipped)} folder(s) that cannot be read ({names}); nothing was {verb}"
        )
    longest = max((len(e.target.rel) - len(source.rel) for e in items), default=0)
    if len(dest.display) + longest > MAX_PATH_CHARS:
        raise InvalidArgument(
            f"{source.display} is too deep to be {verb} to {dest.display}: its paths there would be longer than "
            f"{MAX_PATH_CHARS} characters; nothing was {verb}"
        )
    return items


def _check_carried(source: Target, dest: Target, entries: list[Entry]) -> None:
    """Refuse a copy-and-delete move that would drop what the destination cannot hold."""
    lost = {
        "symbolic links": [e for e in entries if e.type == "symlink"],
        "FIFOs, sockets or devices": [e for e in entries if e.type == "other"],
    }
    if not dest.mount.capabilities.modes:
        lost["files with execute or special permission bits"] = [
            e for e in entries if e.type == "file" and (e.mode or 0) & KEPT_BITS
        ]
    for what, found in lost.items():
        if found:
            names = ", ".join(e.path for e in found[:3]) + (", ..." if len(found) > 3 else "")
            raise InvalidArgument(
                f"cannot move {source.display} to {dest.mount.url}: {len(found)} {what} ({names}) cannot be carried "
                "there; nothing was moved. Move within one mount, or copy_file (which leaves them out) and delete "
                "the source yourself"
            )


def _undoing(vfs: JailedFS, created: list[Target], work: Callable[[], T]) -> T:
    """Run ``work``; if it fails, remove what ``created`` lists (what it made), newest first."""
    try:
        return work()
    except BaseException:
        for target in reversed(created):
            # Cleanup runs even for an abandoned call: straight to the store, errors ignored.
            with contextlib.suppress(Exception):
                target.mount.fs.rm(target.fs_path, recursive=True)
                target.mount.backend.invalidate(target.fs_path)
        raise


def _copy_file(
    vfs: JailedFS, source: Target, dest: Target, *, permissions: int | None, follow: bool, new: bool = False
) -> int:
    """Copy one file's bytes. ``new``: ``dest`` was absent when checked, and must still be
    when the copy lands (on object stores a create-only put makes sure, for files up to
    ``CREATE_ONLY_BYTES``; other writers of this server and of local disks wait for the lock).
    """
    entry = vfs.require_file(source)
    mount = source.mount
    if new and dest.mount.capabilities.conditional_writes and entry.size <= CREATE_ONLY_BYTES:
        vfs.put_if(dest, b"".join(vfs.chunks(source)), None)
        return entry.size
    if mount is dest.mount and mount.capabilities.native_copy:
        # Same store: it copies by itself (server-side on S3), no bytes through us.
        vfs.remember(dest)
        with vfs.guard(source):
            vfs.before_commit(dest)
            mount.fs.cp_file(source.fs_path, dest.fs_path)
            mount.backend.invalidate(dest.fs_path)
        return entry.size
    vfs.put(dest, vfs.chunks(source), follow=follow, permissions=permissions)
    return entry.size


def _copy_tree(vfs: JailedFS, source: Target, dest: Target, items: Found, created: list[Target]) -> int:
    """Copy ``items`` (``source``'s tree) to ``dest`` (new, or an empty directory); links and
    special files are left out. Files and folders keep their modes where ``dest`` has modes.
    """
    created += vfs.make_dirs(dest)
    copied = 0
    folders: list[tuple[Target, int | None]] = []
    for item in items:
        to = Target(dest.mount, posixpath.join(dest.rel, item.target.rel[len(source.rel) :].lstrip("/")))
        if item.type == "directory":
            vfs.make_dir(to)
            created.append(to)
            folders.append((to, item.mode))
        elif item.type == "file":
            copied += _copy_file(vfs, item.target, to, permissions=item.mode, follow=True)
            created.append(to)
    if dest.mount.capabilities.modes:
        for folder, mode in reversed(folders):  # deepest first: a read-only folder is filled before
            if mode is not None:
                with vfs.guard(folder):
                    dest.mount.fs.chmod(folder.fs_path, mode)
    return copied
