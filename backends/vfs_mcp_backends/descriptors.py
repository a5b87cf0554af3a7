"""Race-free walks under one open directory: every path is opened from the root's descriptor,
one component at a time, with ``O_NOFOLLOW``.

Between a check of a path and its use, a process that can write inside the root could swap a
directory for a symlink pointing out. Here the use itself never follows a link it has not
checked: a symlink met on the way is read with ``readlink``, resolved lexically against the
root (leaving it is ``OutsideRoot``) and the walk starts again, at most ``MAX_HOPS`` times.
Every change is then made relative to the directory descriptor that was walked, so the
directory checked is the directory changed.

Whole-tree walks are iterative (no limit on depth) and hold at most ``WINDOW`` directory
descriptors: a directory whose descriptor was let go is opened again through ``..`` of its
child and must be the very directory (device and inode) it was, or the walk stops.

Residual window (docs/security.md): a directory already opened by a walk and then moved
outside the root by someone with write access on both sides is followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

MAX_HOPS = 40
WINDOW = 32
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class OutsideRoot(PermissionError):
    """A symbolic link on the way leads outside the root."""

    def __init__(self) -> None:
        super().__init__(errno.EACCES, "resolves outside its root through a symbolic link")


class RootDescriptor:
    """Descriptor-relative walks under an open directory (owned: ``close`` releases it).

    ``parts``: the components of the directory's real host path, against which absolute
    link targets are resolved.
    """

    def __init__(self, fd: int, parts: list[str]) -> None:
        self.fd = fd
        self.parts = parts

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def reopen(self) -> int:
        """A new descriptor of the root directory itself."""
        return os.open(".", DIR_FLAGS, dir_fd=self.fd)

    def parent(self, parts: list[str], follow: bool = True) -> Parent:
        """The open directory holding the last component, that component, and the canonical
        components of that directory below the root, to use in a ``with`` block that closes
        the directory (walked when this is called).

        ``name`` is "" for the root itself (then the descriptor is the root). With ``follow``,
        a final symlink is resolved too, so ``name`` is never a link.
        """
        return Parent(self, *self._walk(parts, follow))

    def _walk(self, parts: list[str], follow: bool) -> tuple[int, str, list[str]]:
        """``parent``'s walk: its directory is open (the root's own descriptor, or a new one
        the caller closes); nothing is left open when it raises."""
        for _ in range(MAX_HOPS):
            fd = self.fd  # the root is never closed here; each folder opened below it is
            try:
                walked: list[str] = []
                redirect: list[str] | None = None
                for index, part in enumerate(parts[:-1]):
                    try:
                        child = os.open(part, DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or not is_link(part, fd):
                            raise
                        redirect = self._through_link(fd, part, walked, parts[index + 1 :])
                        break
                    if fd != self.fd:
                        os.close(fd)
                    fd = child
                    walked.append(part)
                if redirect is None:
                    name = parts[-1] if parts else ""
                    if not (follow and name and is_link(name, fd)):
                        found, fd = fd, self.fd  # handed to the caller: not closed below
                        return found, name, walked
                    redirect = self._through_link(fd, name, walked, [])
            finally:
                if fd != self.fd:
                    os.close(fd)
            parts = redirect
        raise OSError(errno.ELOOP, "too many levels of symbolic links")

    def _through_link(self, fd: int, name: str, walked: list[str], rest: list[str]) -> list[str]:
        """The root-relative components a link leads to, plus ``rest``; refuses leaving the root."""
        target = os.readlink(name, dir_fd=fd)
        if target.startswith("/"):
            parts = canonical(target.split("/"))
            if parts[: len(self.parts)] != self.parts:
                raise OutsideRoot
            inside = parts[len(self.parts) :]
        else:
            inside = canonical([*walked, *target.split("/")])
        return inside + rest

    def open_directory(self, parts: list[str], follow: bool = True) -> int:
        """A new descriptor of the directory ``parts`` (links inside the root followed)."""
        with self.parent(parts, follow) as (fd, name, _):
            return os.open(name, DIR_FLAGS, dir_fd=fd) if name else os.open(".", DIR_FLAGS, dir_fd=fd)


class Parent:
    """``RootDescriptor.parent``'s directory, component and walked components, its directory
    closed at the end of the ``with`` block (a class, not a generator's context manager: every
    local read and change opens one, and a generator's costs four Python calls more)."""

    __slots__ = ("found", "root")

    def __init__(self, root: RootDescriptor, fd: int, name: str, walked: list[str]) -> None:
        self.root = root
        self.found = fd, name, walked

    def __enter__(self) -> tuple[int, str, list[str]]:
        return self.found

    def __exit__(self, *exc: object) -> None:
        fd = self.found[0]
        if fd != self.root.fd:
            os.close(fd)


def is_link(name: str, fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def canonical(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                raise OutsideRoot
            out.pop()
        else:
            out.append(part)
    return out


def scan(fd: int, stats: bool = True) -> list[tuple[str, os.stat_result]]:
    """Names and lstat results of a directory's entries (ones that vanish meanwhile are left out).

    ``stats=False``: no lstat per entry; each result holds only the type bits of ``st_mode``
    (from the directory listing itself), every other field 0 (a quarter of the time on a
    big tree, for walks that want names and types only).
    """
    with os.scandir(fd) as entries:
        if not stats:  # the type from the listing: is_dir/is_file never raise FileNotFoundError
            return [
                (
                    entry.name,
                    _DIR
                    if entry.is_dir(follow_symlinks=False)
                    else _FILE
                    if entry.is_file(follow_symlinks=False)
                    else _TYPE_ONLY[stat.S_IFLNK if entry.is_symlink() else 0],
                )
                for entry in entries
            ]
        out = []
        for entry in entries:
            try:
                out.append((entry.name, entry.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue
    return out


TYPE_BITS = 0o170000
"""The file type bits of ``st_mode`` (``stat.S_IFMT``), masked inline on a walk's every entry."""
_TYPE_ONLY = {kind: os.stat_result((kind, *(0,) * 9)) for kind in (stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK, 0)}
_DIR, _FILE = _TYPE_ONLY[stat.S_IFDIR], _TYPE_ONLY[stat.S_IFREG]


# -- whole trees ------------------------------------------------------------------------

Event = Literal["entry", "unreadable", "leave"]


@dataclass(slots=True)
class Visit:
    """One step of a tree walk.

    ``entry``: ``rel`` (below the walk's start) exists with lstat ``st``; ``unreadable``: the
    directory just entered could not be opened or listed (skipped); ``leave``: everything
    below the directory ``rel`` was visited. ``dir_fd`` holds ``name`` and is valid only until
    the next step.
    """

    event: Event
    rel: str
    st: os.stat_result
    dir_fd: int
    name: str
    error: OSError | None = None


@dataclass
class _Level:
    fd: int | None
    prefix: str
    todo: list[Any]
    """The entries still to visit, last first: (name, lstat) for ``walk_tree``, rows for ``list_tree``."""
    depth: int
    name: str = ""
    st: os.stat_result | None = None
    ident: tuple[int, int] | None = None
    """The folder's (device, inode), taken when its descriptor is let go (to know it again through ``..``)."""


def _ident(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def walk_tree(fd: int, max_depth: int | None = None, stats: bool = True) -> Iterator[Visit]:
    """Every entry below the open directory ``fd`` (owned: closed at the end), depth first;
    never crosses a link. ``max_depth=1`` visits direct children only. ``stats=False``: each
    visit's ``st`` holds the type only (see ``scan``).
    """
    stack = [_Level(fd, "", sorted(scan(fd, stats), reverse=True), 1)]
    try:
        while stack:
            level = stack[-1]
            assert level.fd is not None
            todo, prefix, deeper = level.todo, level.prefix, max_depth is None or level.depth < max_depth
            while todo:  # this level's entries, until one is a directory to go into
                name, st = todo.pop()
                rel = prefix + name
                yield Visit("entry", rel, st, level.fd, name)
                if st.st_mode & TYPE_BITS != stat.S_IFDIR or not deeper:
                    continue
                child = _enter(level.fd, name)
                if isinstance(child, OSError):
                    yield Visit("unreadable", rel, st, level.fd, name, child)
                    continue
                if child is None:
                    continue
                try:
                    listed = scan(child, stats)
                except OSError as exc:
                    os.close(child)
                    yield Visit("unreadable", rel, st, level.fd, name, exc)
                    continue
                _push(stack, _Level(child, rel + "/", sorted(listed, reverse=True), level.depth + 1, name, st))
                break
            else:  # every entry of this level visited: leave it
                stack.pop()
                _close(level, stack)
                if stack and level.st is not None:
                    assert stack[-1].fd is not None
                    yield Visit("leave", level.prefix.rstrip("/"), level.st, stack[-1].fd, level.name)
    finally:
        for level in stack:
            if level.fd is not None:
                os.close(level.fd)


Row = tuple[str, str, int]
"""A listed entry: its path below the listing's start, its fsspec type, its size (0 but for files)."""
_DIRECTORY = "directory"


def list_tree(
    fd: int, max_depth: int | None = None, sizes: bool = True, keep: Callable[[str, str], bool] | None = None
) -> tuple[list[Row], list[str]]:
    """What ``walk_tree`` visits below the open directory ``fd`` (owned: closed at the end), as
    rows in the same depth-first name order, and the folders that could not be read: no object
    per entry but its row, and an lstat for regular files alone (a folder's or a link's type is
    the listing's own; a link is never crossed). ``sizes=False``: no lstat at all, files
    measured 0. ``keep(name, rel)``: only the entries it accepts are listed (and measured);
    folders are gone into all the same."""
    rows: list[Row] = []
    unreadable: list[str] = []
    add = rows.append
    stack = [_Level(fd, "", _listed(fd, "", sizes, keep), 1)]
    try:
        while stack:
            level = stack[-1]
            assert level.fd is not None
            todo, prefix, deeper = level.todo, level.prefix, max_depth is None or level.depth < max_depth
            while todo:  # this folder's rows, until one is a folder to go into
                name, kind, size = todo.pop()
                rel = prefix + name
                if kind != _DIRECTORY:
                    add((rel, kind, size))
                    continue
                if keep is None or keep(name, rel):
                    add((rel, kind, 0))
                if not deeper:
                    continue
                child = _enter(level.fd, name)
                if isinstance(child, OSError):
                    unreadable.append(rel)
                    continue
                if child is None:
                    continue
                try:
                    listed = _listed(child, rel + "/", sizes, keep)
                except OSError:
                    os.close(child)
                    unreadable.append(rel)
                    continue
                _push(stack, _Level(child, rel + "/", listed, level.depth + 1))
                break
            else:
                stack.pop()
                _close(level, stack)
    finally:
        for level in stack:
            if level.fd is not None:
                os.close(level.fd)
    return rows, unreadable


def _listed(fd: int, prefix: str, sizes: bool, keep: Callable[[str, str], bool] | None) -> list[Row]:
    """A folder's entries as (name, fsspec type, size), last name first (popped from the end:
    name order). Folders are kept whatever ``keep`` says (to be gone into); a regular file is
    measured once ``keep`` accepts it, and takes its type from that lstat (one that vanished
    meanwhile is left out)."""
    out: list[Row] = []
    add = out.append
    with os.scandir(fd) as entries:
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                add((name, _DIRECTORY, 0))
                continue
            if keep is not None and not keep(name, prefix + name):
                continue
            if not entry.is_file(follow_symlinks=False):
                add((name, "symlink" if entry.is_symlink() else "other", 0))
            elif not sizes:
                add((name, "file", 0))
            else:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                mode = st.st_mode & TYPE_BITS
                add((name, "file", st.st_size) if mode == stat.S_IFREG else (name, _TYPES.get(mode, "other"), 0))
    out.sort(reverse=True)  # names differ: only they are compared
    return out


_TYPES = {stat.S_IFDIR: _DIRECTORY, stat.S_IFREG: "file", stat.S_IFLNK: "symlink"}


def _enter(fd: int, name: str) -> int | OSError | None:
    """A descriptor of the folder ``name`` listed in ``fd``; None when it is no longer a folder
    to go into (removed, or replaced by a file or a link since the listing); the error when it
    cannot be opened."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return None if exc.errno in (errno.ENOTDIR, errno.ELOOP) else exc


def _push(stack: list[_Level], level: _Level) -> None:
    """Go into ``level``, letting go of the descriptor ``WINDOW`` levels up (its identity kept,
    to know it again through ``..``)."""
    stack.append(level)
    let_go = stack[-WINDOW - 1] if len(stack) > WINDOW else None
    if let_go is not None and let_go.fd is not None:
        let_go.ident = _ident(os.fstat(let_go.fd))
        os.close(let_go.fd)
        let_go.fd = None


def _close(level: _Level, stack: list[_Level]) -> None:
    """Close a finished level, first opening its parent again through ``..`` if it was let go."""
    assert level.fd is not None
    try:
        if stack and stack[-1].fd is None:
            parent = os.open("..", DIR_FLAGS, dir_fd=level.fd)
            if _ident(os.fstat(parent)) != stack[-1].ident:
                os.close(parent)
                raise OSError(errno.ESTALE, "a folder was moved during the walk")
            stack[-1].fd = parent
    finally:
        os.close(level.fd)
        level.fd = None


def remove_tree(fd: int, name: str) -> None:
    """Remove the directory ``name`` in the open directory ``fd`` and everything below it;
    never follows a link (a link is removed, not its target).
    """
    top = os.open(name, DIR_FLAGS, dir_fd=fd)
    for visit in walk_tree(top):
        if visit.event == "unreadable":
            assert visit.error is not None
            raise visit.error
        if visit.event == "entry" and not stat.S_ISDIR(visit.st.st_mode):
            os.unlink(visit.name, dir_fd=visit.dir_fd)
        elif visit.event == "leave":
            os.rmdir(visit.name, dir_fd=visit.dir_fd)
    os.rmdir(name, dir_fd=fd)
