"""The reading half of the local store (``localfs.DescriptorFileSystem`` adds the writes):
the root, paths, metadata, listings and reads, each by a descriptor walk from the root.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import stat
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from time import time_ns
from typing import Any, Self, TypeVar, cast

from fsspec import AbstractFileSystem
from fsspec.utils import stringify_path

from vfs_mcp_backends.base import Keep, Names
from vfs_mcp_backends.descriptors import DIR_FLAGS, TYPE_BITS, RootDescriptor, canonical, list_tree, scan, walk_tree
from vfs_mcp_backends.hostpaths import real_path
from vfs_mcp_backends.regular_files import READ_FLAGS, open_regular, read_range

Method = TypeVar("Method", bound=Callable[..., Any])


def names_path(method: Method) -> Method:
    """``method``'s OSErrors name the path it was given (``filename``; ``filename2`` the second
    path of a two-path call), not the last component a descriptor-relative call saw."""

    @functools.wraps(method)
    def call(self: DescriptorReads, path: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, path, *args, **kwargs)
        except OSError as exc:
            if exc.errno is not None:
                exc.filename = self._strip_protocol(path)
                if method.__name__ in _TWO_PATHS and args:
                    exc.filename2 = self._strip_protocol(args[0])
            raise

    return cast(Method, call)


_TWO_PATHS = frozenset({"cp_file", "mv"})


class DescriptorReads(AbstractFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """Descriptor-relative reads under one local folder (``root``, default ``/``)."""

    protocol = ("vfslocal",)
    root_marker = "/"
    cachable = False  # each instance owns a descriptor of its own root

    def __init__(
        self, root: str = "/", *, auto_mkdir: bool = False, _root: RootDescriptor | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.auto_mkdir = auto_mkdir
        self.root = os.path.abspath(root)
        if _root is None:
            real = real_path(self.root)
            _root = RootDescriptor(os.open(real, DIR_FLAGS), [p for p in real.split("/") if p])
        self.real_root = "/" + "/".join(_root.parts)
        self._dir = _root
        weakref.finalize(self, _root.close)

    # -- paths ------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(stringify_path(path))
        for prefix in ("file://", "vfslocal://"):
            text = text.removeprefix(prefix)
        return text.rstrip("/") or "/"

    def _parts(self, path: str) -> list[str]:
        """The root-relative components of a host path under the root."""
        return self._inside(self._strip_protocol(path))

    def _inside(self, path: str) -> list[str]:
        """``_parts`` of a path already stripped of its protocol (``_strip_protocol``)."""
        for base in (self.root, self.real_root):
            if path == base:
                return []
            stem = base.rstrip("/") + "/"
            if path.startswith(stem):
                return canonical(path[len(stem) :].split("/"))
        raise PermissionError(errno.EACCES, "not under the root of this filesystem", path)

    @names_path
    def real_path(self, path: str) -> str:
        """The host path ``path`` really names: links inside the root resolved, checked inside it."""
        with self._dir.parent(self._parts(path)) as (_, name, walked):
            return "/" + "/".join([*self._dir.parts, *walked, *([name] if name else [])])

    @names_path
    def lock_folder(self, path: str) -> tuple[int, bool]:
        """A new descriptor of the folder ``path``, or of its nearest existing ancestor (for a
        write that creates folders), to take an advisory lock on; whether it is ``path`` itself."""
        parts = self._parts(path)
        exact = True
        while True:
            try:
                return self._dir.open_directory(parts), exact
            except OSError:  # missing, a file, or a link (out, or a loop): the folder above is locked
                if not parts:
                    raise
                parts, exact = parts[:-1], False

    @names_path
    def subtree(self, path: str) -> Self:
        """A filesystem rooted at the directory ``path`` inside this one, opened by a descriptor walk."""
        parts = self._parts(path)
        fd = self._dir.open_directory(parts)
        real = [p for p in self.real_path(path).split("/") if p]
        return type(self)(path, auto_mkdir=self.auto_mkdir, _root=RootDescriptor(fd, real))

    # -- metadata ---------------------------------------------------------------------

    def _lstat(self, parts: list[str], follow: bool) -> os.stat_result:
        with self._dir.parent(parts, follow) as (fd, name, _):
            return os.stat(name, dir_fd=fd, follow_symlinks=False) if name else os.fstat(fd)

    @names_path
    def info(self, path: str, follow: bool = True, **kwargs: Any) -> dict[str, Any]:
        """Metadata; with ``follow`` a link reports its target (``islink`` still says it is one)."""
        parts = self._parts(path)
        seen = time_ns()
        st = self._lstat(parts, follow=False)
        is_link = stat.S_ISLNK(st.st_mode)
        if follow and is_link:
            st = self._lstat(parts, follow=True)
        return _info(self._strip_protocol(path), st, is_link, seen)

    @names_path
    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        """A folder's entries by name; a file (or a link to one) lists itself, as in fsspec."""
        base = self._strip_protocol(path)
        try:
            fd = self._dir.open_directory(self._parts(path))
        except NotADirectoryError:
            itself = self.info(path)  # a file; a parent that is a file raises here
            return [itself] if detail else [base]
        try:
            entries = scan(fd)
        finally:
            os.close(fd)
        found = [_info(_join(base, name), st) for name, st in sorted(entries, key=lambda item: item[0])]
        return found if detail else [item["name"] for item in found]

    @names_path
    def find(
        self,
        path: str,
        maxdepth: int | None = None,
        withdirs: bool = False,
        detail: bool = False,
        metadata: bool = True,
        **kwargs: Any,
    ) -> Any:
        """Everything below ``path``, never through a link. A folder that cannot be read is
        reported with ``"unreadable"`` set (its contents are missing), not raised.
        ``metadata=False``: names and types only, no lstat of each entry (no sizes, modes or times).
        As in fsspec: a file finds itself, a missing path nothing, and ``withdirs`` lists the
        start folder too.
        """
        base = self._strip_protocol(path)
        prefix = base.rstrip("/") + "/"
        out: dict[str, dict[str, Any]] = {}
        try:
            top = self._dir.open_directory(self._parts(path))
        except (FileNotFoundError, NotADirectoryError):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                out[base] = self.info(path)  # a file, or nothing (a parent that is a file)
            return out if detail else sorted(out)
        if withdirs:
            st = os.fstat(top)
            out[base] = _info(base, st) if metadata else {"name": base, "type": "directory"}
        for visit in walk_tree(top, maxdepth, stats=metadata):
            name = prefix + visit.rel
            if visit.event == "entry" and (withdirs or not stat.S_ISDIR(visit.st.st_mode)):
                out[name] = _info(name, visit.st) if metadata else {"name": name, "type": _kind(visit.st.st_mode)}
            elif visit.event == "unreadable" and name in out:
                out[name]["unreadable"] = (
                    os.strerror(visit.error.errno or errno.EACCES) if visit.error else "unreadable"
                )
        return out if detail else sorted(out)

    @names_path
    def names(self, path: str, maxdepth: int | None = None, metadata: bool = True, keep: Keep | None = None) -> Names:
        """What ``find`` lists, as (path below ``path``, type, size) in the walk's depth-first
        name order, and the folders that could not be read: a row per entry and no more
        (``descriptors.list_tree``). Only regular files are measured, an lstat each; with
        ``keep``, only those it accepts."""
        return list_tree(self._dir.open_directory(self._parts(path)), maxdepth, metadata, keep)

    @names_path
    def modified(self, path: str) -> datetime:
        return datetime.fromtimestamp(self.info(path)["mtime"], tz=UTC)

    @names_path
    def created(self, path: str) -> datetime:
        return datetime.fromtimestamp(self.info(path)["created"], tz=UTC)

    # -- reading ----------------------------------------------------------------------

    @names_path
    def open_regular(self, path: str) -> int:
        """A read descriptor of the regular file ``path``; never blocks on a FIFO or device."""
        return self._open_file(self._strip_protocol(path))[0]

    def _open_file(self, path: str) -> tuple[int, os.stat_result, bool]:
        """``open_regular`` of ``path`` (stripped of its protocol), the descriptor's fstat (made
        once, by ``open_regular``), and whether ``path`` is a link (to the file opened)."""
        parts = self._inside(path)
        with self._dir.parent(parts, follow=False) as (fd, name, _):
            st = os.stat(_named(name, path), dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISLNK(st.st_mode):
                return *open_regular(fd, name, READ_FLAGS, st), False
        with self._dir.parent(parts) as (fd, name, _):  # a link: what it leads to, inside the root
            return *open_regular(fd, _named(name, path), READ_FLAGS), True

    @names_path
    def read_whole(self, path: str, limit: int) -> tuple[dict[str, Any], bytes | None]:
        """The file's ``info`` and, when it holds at most ``limit`` bytes, its bytes: one walk,
        one open, one fstat."""
        name = self._strip_protocol(path)
        seen = time_ns()  # before the fstat ``identity`` judges: earlier only makes it warier
        fd, st, is_link = self._open_file(name)
        try:
            data = read_range(fd, 0, st.st_size) if st.st_size <= limit else None
            return _info(name, st, is_link, seen), data
        finally:
            os.close(fd)

    @names_path
    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        fd, st, _ = self._open_file(self._strip_protocol(path))
        try:
            size = st.st_size
            first = 0 if start is None else (start if start >= 0 else max(0, size + start))
            last = size if end is None else (end if end >= 0 else max(0, size + end))
            return read_range(fd, first, last)
        finally:
            os.close(fd)


class QuietReader(io.BufferedReader):
    """A buffered reader that closes quietly when dropped unclosed, as fsspec's own files do
    (its compression wrappers never close the file they read)."""

    def __del__(self) -> None:
        self.close()

    def _dealloc_warn(self, source: object) -> None:
        """What a wrapper dropped unclosed (``io.TextIOWrapper``) calls to warn: this file
        closes quietly with it, as fsspec's Python file objects do."""


def _join(base: str, rel: str) -> str:
    return f"{base.rstrip('/')}/{rel}"


_KINDS = {stat.S_IFDIR: "directory", stat.S_IFREG: "file", stat.S_IFLNK: "symlink"}
"""fsspec's type names by the file type bits of ``st_mode``; any other type is "other"."""


def _kind(mode: int) -> str:
    return _KINDS.get(mode & TYPE_BITS, "other")


def _info(name: str, st: os.stat_result, is_link: bool | None = None, seen: int | None = None) -> dict[str, Any]:
    """fsspec's metadata of ``st``; with ``seen`` (the clock, in ns, just before the stat) the
    file's ``identity`` too."""
    kind = _kind(st.st_mode)
    return {
        "name": name,
        "size": st.st_size if kind == "file" else 0,
        "type": kind,
        "mode": st.st_mode,
        "nlink": st.st_nlink,
        "uid": st.st_uid,
        "ino": st.st_ino,
        "mtime": st.st_mtime,
        "atime": st.st_atime,
        "created": getattr(st, "st_birthtime", st.st_ctime),
        "islink": kind == "symlink" if is_link is None else is_link,
        "identity": identity(st, seen) if seen is not None and kind == "file" else None,
    }


CLOCK_STEP_NS = 20_000_000
"""How far behind the clock a file's times may be stamped: the kernel stamps them from a clock
that moves once a tick (1-10 ms), twice over."""


def identity(st: os.stat_result, seen: int) -> tuple[int, int, int, int, int] | None:
    """What names a file's content as long as it stays the same: (device, inode, size, mtime,
    ctime), from a stat made at ``seen`` (the clock, in ns, just before it). Any write made since
    moves the ctime (which no one can set back, unlike the mtime) — unless the file was changed
    within a step of the stamps' clock before the stat: then a second change may land on the
    same ctime, and there is no identity (git's racy index entry). The step is the clock's tick,
    or what the stamp shows of the filesystem's (a ctime in whole seconds: 2 s, FAT's)."""
    stamp = st.st_ctime_ns
    step = 1
    while step < 10**9 and stamp % (step * 10) == 0:
        step *= 10
    if step == 10**9:
        step = 2 * 10**9
    if stamp + step + CLOCK_STEP_NS >= seen:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, stamp)


def _named(name: str, path: str) -> str:
    """``name`` from a walk to ``path``, which is "" when ``path`` is the root: not a file."""
    if not name:
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    return name
