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
from typing import Literal

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

    @contextlib.contextmanager
    def parent(self, parts: list[str], follow: bool = True) -> Iterator[tuple[int, str, list[str]]]:
        """The open directory holding the last component, that component, and the canonical
        components of that directory below the root.

        ``name`` is "" for the root itself (then the descriptor is the root). With ``follow``,
        a final symlink is resolved too, so ``name`` is never a link.
        """
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
                        yield fd, name, walked
                        return
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
    todo: list[tuple[str, os.stat_result]]
    depth: int
    name: str = ""
    st: os.stat_result | None = None
    ident: tuple[int, int] | None = None
    """The folder's (device, inode), taken when its descriptor is let go (to know it again through ``..``)."""


def _ident(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def walk_tree(
    fd: int, max_depth: int | None = None, stats: bool = True, keep: Callable[[str, str], bool] | None = None
) -> Iterator[Visit]:
    """Every entry below the open directory ``fd`` (owned: closed at the end), depth first;
    never crosses a link. ``max_depth=1`` visits direct children only. ``stats=False``: each
    visit's ``st`` holds the type only (see ``scan``). ``keep(name, rel)``: visit only the
    entries it accepts (folders are gone into all the same), for a search that keeps few.
    """
    stack = [_Level(fd, "", _todo(scan(fd, stats), "", keep), 1)]
    try:
        while stack:
            level = stack[-1]
            assert level.fd is not None
            todo, prefix, deeper = level.todo, level.prefix, max_depth is None or level.depth < max_depth
            while todo:  # this level's entries, until one is a directory to go into
                name, st = todo.pop()
                rel = prefix + name
                if keep is None or keep(name, rel):
                    yield Visit("entry", rel, st, level.fd, name)
                if st.st_mode & TYPE_BITS != stat.S_IFDIR or not deeper:
                    continue
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=level.fd)
                except FileNotFoundError:
                    continue  # removed since the listing
                except OSError as exc:
                    if exc.errno == errno.ENOTDIR or exc.errno == errno.ELOOP:
                        continue  # replaced by a file or a link since the listing: nothing to descend into
                    yield Visit("unreadable", rel, st, level.fd, name, exc)
                    continue
                try:
                    listed = scan(child, stats)
                except OSError as exc:
                    os.close(child)
                    yield Visit("unreadable", rel, st, level.fd, name, exc)
                    continue
                stack.append(_Level(child, rel + "/", _todo(listed, rel + "/", keep), level.depth + 1, name, st))
                let_go = stack[-WINDOW - 1] if len(stack) > WINDOW else None
                if let_go is not None and let_go.fd is not None:
                    let_go.ident = _ident(os.fstat(let_go.fd))
                    os.close(let_go.fd)
                    let_go.fd = None
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


def _todo(
    entries: list[tuple[str, os.stat_result]], prefix: str, keep: Callable[[str, str], bool] | None
) -> list[tuple[str, os.stat_result]]:
    """A folder's entries to visit or go into, last first (popped from the end: name order;
    names differ, so ``st`` is never compared). With ``keep``, the entries it refuses that are
    not folders are left out here, in one pass: the walk's loop meets only the few it keeps
    (and asks ``keep`` again for those and the folders)."""
    if keep is not None:
        entries = [(n, st) for n, st in entries if st.st_mode & TYPE_BITS == stat.S_IFDIR or keep(n, prefix + n)]
    return sorted(entries, reverse=True)


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
