"""A local folder as an fsspec filesystem, rooted at an open descriptor of the folder.

Paths are host paths under the root (as ``LocalFileSystem`` takes them); every one is
opened by a descriptor walk from the root (``descriptors.RootDescriptor``), so a symlink
swapped in between a check and a use never leads out. On top of fsspec's verbs:

- reads open with ``O_NONBLOCK`` and check the open descriptor with ``fstat``: a FIFO,
  socket or device is ``NotRegularFile``, never waited on;
- writes are staged (``StagedFile``): a temp file beside the target, ``fsync``, then a
  rename onto the name, mode kept; a file with other hard links is replaced, never written
  into;
- ``info(path, follow=False)`` reports a link itself; ``find`` walks iteratively and marks
  folders it could not read (``"unreadable"``) instead of failing;
- errors name the whole path asked for (``OSError.filename``), not the component a
  descriptor-relative call saw.

Everything else is fsspec's contract, as ``LocalFileSystem`` keeps it (fsspec's abstract suite
passes with ``auto_mkdir=True``, as it does on ``LocalFileSystem(auto_mkdir=True)``), but for
these deliberate differences (docs/architecture.md):

- a path outside the root, or a link leading out of it, is ``PermissionError``;
- a binary write left on an exception inside its ``with`` block keeps the old content (fsspec's
  files commit what they hold); a text-mode wrapper closes its file, which commits;
- ``r+b`` and other read-write modes are refused (``ValueError``): a staged write replaces
  the whole file;
- ``mv`` renames onto the destination in one step (``os.replace``): a file onto an existing
  folder fails, where fsspec's copy-and-delete would put it inside.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import stat
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from fsspec import AbstractFileSystem
from fsspec.utils import stringify_path

from vfs_mcp_backends.base import Keep, Names
from vfs_mcp_backends.descriptors import (
    DIR_FLAGS,
    TYPE_BITS,
    RootDescriptor,
    canonical,
    remove_tree,
    scan,
    walk_tree,
)
from vfs_mcp_backends.regular_files import APPEND_FLAGS, READ_FLAGS, open_regular, read_range, refuse
from vfs_mcp_backends.tempfiles import is_temp_name
from vfs_mcp_backends.writes import COPY_CHUNK, AppendFile, StagedFile

Method = TypeVar("Method", bound=Callable[..., Any])


def _names_path(method: Method) -> Method:
    """``method``'s OSErrors name the path it was given (``filename``; ``filename2`` the second
    path of a two-path call), not the last component a descriptor-relative call saw."""

    @functools.wraps(method)
    def call(self: DescriptorFileSystem, path: str, *args: Any, **kwargs: Any) -> Any:
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


class DescriptorFileSystem(AbstractFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """Descriptor-relative I/O under one local folder (see the module docstring).

    ``root``: the folder (default ``/``, for ``fsspec.filesystem("vfslocal")`` and URLs);
    ``auto_mkdir``: writes create their parent folders, as ``LocalFileSystem(auto_mkdir=True)``.
    """

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
            real = os.path.realpath(self.root)
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
        path = self._strip_protocol(path)
        for base in (self.root, self.real_root):
            if path == base:
                return []
            stem = base.rstrip("/") + "/"
            if path.startswith(stem):
                return canonical(path[len(stem) :].split("/"))
        raise PermissionError(errno.EACCES, "not under the root of this filesystem", path)

    @_names_path
    def real_path(self, path: str) -> str:
        """The host path ``path`` really names: links inside the root resolved, checked inside it."""
        with self._dir.parent(self._parts(path)) as (_, name, walked):
            return "/" + "/".join([*self._dir.parts, *walked, *([name] if name else [])])

    @_names_path
    def lock_folder(self, path: str) -> int:
        """A new descriptor of the folder holding ``path``, or of its nearest existing ancestor
        (for a write that creates folders), to take an advisory lock on."""
        parts = self._parts(path)[:-1]
        while True:
            try:
                return self._dir.open_directory(parts)
            except (FileNotFoundError, NotADirectoryError):
                if not parts:
                    raise
                parts = parts[:-1]

    @_names_path
    def subtree(self, path: str) -> DescriptorFileSystem:
        """A filesystem rooted at the directory ``path`` inside this one, opened by a descriptor walk."""
        parts = self._parts(path)
        fd = self._dir.open_directory(parts)
        real = [p for p in self.real_path(path).split("/") if p]
        return DescriptorFileSystem(path, _root=RootDescriptor(fd, real))

    # -- metadata ---------------------------------------------------------------------

    def _lstat(self, parts: list[str], follow: bool) -> os.stat_result:
        with self._dir.parent(parts, follow) as (fd, name, _):
            return os.stat(name, dir_fd=fd, follow_symlinks=False) if name else os.fstat(fd)

    @_names_path
    def info(self, path: str, follow: bool = True, **kwargs: Any) -> dict[str, Any]:
        """Metadata; with ``follow`` a link reports its target (``islink`` still says it is one)."""
        parts = self._parts(path)
        st = self._lstat(parts, follow=False)
        is_link = stat.S_ISLNK(st.st_mode)
        if follow and is_link:
            st = self._lstat(parts, follow=True)
        return _info(self._strip_protocol(path), st, is_link)

    @_names_path
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

    @_names_path
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

    @_names_path
    def names(self, path: str, maxdepth: int | None = None, metadata: bool = True, keep: Keep | None = None) -> Names:
        """What ``find`` lists, as (path below ``path``, type, size) in the walk's depth-first
        name order, and the folders that could not be read: no dict per entry. With ``keep``
        only the entries it accepts are listed, and only those are measured (an lstat each)."""
        items: list[tuple[str, str, int]] = []
        unreadable: list[str] = []
        top = self._dir.open_directory(self._parts(path))
        for visit in walk_tree(top, maxdepth, stats=metadata and not keep, keep=keep):
            if visit.event == "unreadable":
                unreadable.append(visit.rel)
                continue
            if visit.event != "entry":
                continue
            st = visit.st
            if keep is not None and metadata:
                try:
                    st = os.stat(visit.name, dir_fd=visit.dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # gone since the listing
            kind = _KINDS.get(st.st_mode & TYPE_BITS, "other")  # _kind, inline: once an entry
            items.append((visit.rel, kind, st.st_size if kind == "file" else 0))
        return items, unreadable

    @_names_path
    def modified(self, path: str) -> datetime:
        return datetime.fromtimestamp(self.info(path)["mtime"], tz=UTC)

    @_names_path
    def created(self, path: str) -> datetime:
        return datetime.fromtimestamp(self.info(path)["created"], tz=UTC)

    # -- reading ----------------------------------------------------------------------

    @_names_path
    def open_regular(self, path: str) -> int:
        """A read descriptor of the regular file ``path``; never blocks on a FIFO or device."""
        return self._open_file(path)[0]

    def _open_file(self, path: str) -> tuple[int, bool]:
        """``open_regular``, and whether ``path`` is a link (to the file opened)."""
        parts = self._parts(path)
        with self._dir.parent(parts, follow=False) as (fd, name, _):
            st = os.stat(_named(name, path), dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISLNK(st.st_mode):
                return open_regular(fd, name, READ_FLAGS, st), False
        with self._dir.parent(parts) as (fd, name, _):  # a link: what it leads to, inside the root
            return open_regular(fd, _named(name, path), READ_FLAGS), True

    @_names_path
    def read_whole(self, path: str, limit: int) -> tuple[dict[str, Any], bytes | None]:
        """The file's ``info`` and, when it holds at most ``limit`` bytes, its bytes: one walk, one open."""
        fd, is_link = self._open_file(path)
        try:
            st = os.fstat(fd)
            data = read_range(fd, 0, st.st_size) if st.st_size <= limit else None
            return _info(self._strip_protocol(path), st, is_link), data
        finally:
            os.close(fd)

    @_names_path
    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        fd = self.open_regular(path)
        try:
            size = os.fstat(fd).st_size
            first = 0 if start is None else (start if start >= 0 else max(0, size + start))
            last = size if end is None else (end if end >= 0 else max(0, size + end))
            return read_range(fd, first, last)
        finally:
            os.close(fd)

    # -- writing ----------------------------------------------------------------------

    @_names_path
    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: Any = None,
        *,
        follow: bool = True,
        permissions: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """``rb``: a reader; ``wb``/``xb``: a ``StagedFile``; ``ab``: an ``AppendFile``, or a staged
        copy when the file has other hard links. ``follow=False``: a link at ``path`` is replaced,
        never written through. ``permissions``: the new file's mode (default: the old file's).
        """
        if mode == "rb":
            return _Reader(io.FileIO(self.open_regular(path), "rb"))
        if mode not in ("wb", "xb", "ab"):
            raise ValueError(f"unsupported file mode: {mode!r} (a write replaces the whole file)")
        if self.auto_mkdir:
            self.makedirs(self._parent(path), exist_ok=True)
        with self._dir.parent(self._parts(path), follow) as (fd, name, _):
            if not name:
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            if mode == "ab":
                appended = self._append_to(fd, name, autocommit)
                if appended is not None:
                    return appended
            staged = StagedFile(fd, name, autocommit=autocommit, exclusive=mode == "xb", permissions=permissions)
            if mode == "ab":
                self._copy_into(fd, name, staged)  # shared through a hard link: replace this name only
            return staged

    def _append_to(self, fd: int, name: str, autocommit: bool) -> AppendFile | None:
        """An appender for ``name``, or None when a new file must be staged (none yet, or hard-linked)."""
        try:
            handle = open_regular(fd, name, APPEND_FLAGS)
        except FileNotFoundError:
            return None
        if os.fstat(handle).st_nlink > 1:
            os.close(handle)
            return None
        return AppendFile(handle, autocommit=autocommit)

    def _copy_into(self, fd: int, name: str, staged: StagedFile) -> None:
        try:
            try:
                handle = open_regular(fd, name, READ_FLAGS)
            except FileNotFoundError:
                return  # a new file: nothing to append to
            with os.fdopen(handle, "rb") as old:
                while chunk := old.read(COPY_CHUNK):
                    staged.write(chunk)
        except BaseException:
            staged.discard()
            raise

    @_names_path
    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """Copy a file; a folder is made at ``path2`` (what fsspec's recursive copy asks)."""
        try:
            handle = self.open_regular(path1)
        except IsADirectoryError:
            self.makedirs(path2, exist_ok=True)
            return
        with os.fdopen(handle, "rb") as source, self._open(path2, "wb", **kwargs) as dest:
            while chunk := source.read(COPY_CHUNK):
                dest.write(chunk)

    @_names_path
    def mv(self, path1: str, path2: str, **kwargs: Any) -> None:
        """Rename ``path1`` (a link itself, not its target) onto ``path2`` in one step."""
        if self.auto_mkdir:
            self.makedirs(self._parent(path2), exist_ok=True)
        with (
            self._dir.parent(self._parts(path1), follow=False) as (src_fd, src_name, _),
            self._dir.parent(self._parts(path2)) as (dst_fd, dst_name, _),
        ):
            if not src_name or not dst_name:
                raise PermissionError(errno.EPERM, "the root cannot be moved", path1)
            os.replace(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    @_names_path
    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        if create_parents:
            self.makedirs(path, exist_ok=False)
            return
        with self._dir.parent(self._parts(path)) as (fd, name, _):
            if not name:
                raise FileExistsError(errno.EEXIST, "exists", path)
            os.mkdir(name, dir_fd=fd)

    @_names_path
    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        parts = self._parts(path)
        for depth in range(1, len(parts) + 1):
            try:
                with self._dir.parent(parts[:depth]) as (fd, name, _):
                    os.mkdir(name, dir_fd=fd)
            except FileExistsError:
                if depth == len(parts) and not exist_ok:
                    raise
        if not parts and not exist_ok:
            raise FileExistsError(errno.EEXIST, "exists", path)

    @_names_path
    def chmod(self, path: str, mode: int) -> None:
        """Set the mode of a directory or regular file (opened without following a link)."""
        with self._dir.parent(self._parts(path)) as (fd, name, _):
            handle = os.open(name, READ_FLAGS, dir_fd=fd) if name else os.open(".", DIR_FLAGS, dir_fd=fd)
        try:
            st = os.fstat(handle)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                refuse(st, name)
            os.fchmod(handle, mode)
        finally:
            os.close(handle)

    @_names_path
    def rmdir(self, path: str) -> None:
        with self._dir.parent(self._parts(path), follow=False) as (fd, name, _):
            os.rmdir(name, dir_fd=fd)

    def _rm(self, path: str) -> None:
        """Unlink a file or a link (never its target)."""
        with self._dir.parent(self._parts(path), follow=False) as (fd, name, _):
            os.unlink(name, dir_fd=fd)

    @_names_path
    def rm_file(self, path: str) -> None:
        self._rm(path)

    def rm(self, path: str | list[str], recursive: bool = False, maxdepth: int | None = None) -> None:
        for one in [path] if isinstance(path, str) else path:
            self._rm_one(one, recursive)

    @_names_path
    def _rm_one(self, path: str, recursive: bool) -> None:
        with self._dir.parent(self._parts(path), follow=False) as (fd, name, _):
            if not name:
                raise PermissionError(errno.EPERM, "the root cannot be removed", path)
            if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=fd)
            elif recursive:
                remove_tree(fd, name)
            else:
                os.rmdir(name, dir_fd=fd)

    def sweep_temp_files(self, older_than: float) -> int:
        """Delete our temp files (``tempfiles.is_temp_name``, regular, ours, one link) older
        than ``older_than`` seconds: younger ones may belong to a write in flight.
        """
        cutoff = time.time() - older_than
        removed = 0
        # Names and types only: an lstat for the few names of our form, not for every entry.
        for visit in walk_tree(self._dir.reopen(), stats=False):
            if visit.event != "entry" or not is_temp_name(visit.name):
                continue
            with contextlib.suppress(OSError):
                st = os.stat(visit.name, dir_fd=visit.dir_fd, follow_symlinks=False)
                if (
                    stat.S_ISREG(st.st_mode)
                    and st.st_uid == os.geteuid()
                    and st.st_nlink == 1
                    and st.st_mtime <= cutoff
                ):
                    os.unlink(visit.name, dir_fd=visit.dir_fd)
                    removed += 1
        return removed


class _Reader(io.BufferedReader):
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


def _info(name: str, st: os.stat_result, is_link: bool | None = None) -> dict[str, Any]:
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
    }


def _named(name: str, path: str) -> str:
    """``name`` from a walk to ``path``, which is "" when ``path`` is the root: not a file."""
    if not name:
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    return name
