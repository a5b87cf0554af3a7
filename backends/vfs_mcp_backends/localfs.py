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
- a write left on an exception keeps the old content (fsspec's files commit what they hold),
  whoever closes it on the way out: its own ``with`` block, a text or compression wrapper,
  ``fsspec.open``'s ``OpenFile``;
- ``r+b`` and other read-write modes are refused (``ValueError``): a staged write replaces
  the whole file;
- ``mv`` renames onto the destination in one step (``os.replace``): a file onto an existing
  folder fails, where fsspec's copy-and-delete would put it inside.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import time
from collections.abc import Callable, Sequence
from typing import Any

from vfs_mcp_backends.descriptors import DIR_FLAGS, remove_tree, walk_tree
from vfs_mcp_backends.localreads import DescriptorReads, QuietReader, names_path
from vfs_mcp_backends.regular_files import APPEND_FLAGS, READ_FLAGS, open_regular, refuse
from vfs_mcp_backends.staged_files import COPY_CHUNK, AppendFile, StagedFile
from vfs_mcp_backends.tempfiles import is_temp_name

SWEEP_PAUSE_EVERY = 256
"""Entries a sweep walks between two calls of its ``pause``: short enough that a call waits on a
sweep for no time a person notices, long enough that the pauses cost little."""


class DescriptorFileSystem(DescriptorReads):
    """Descriptor-relative I/O under one local folder (see the module docstring).

    ``root``: the folder (default ``/``, for ``fsspec.filesystem("vfslocal")`` and URLs);
    ``auto_mkdir``: writes create their parent folders, as ``LocalFileSystem(auto_mkdir=True)``.
    """

    # -- writing ----------------------------------------------------------------------

    @names_path
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
            return QuietReader(io.FileIO(self.open_regular(path), "rb"))
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
            handle, st = open_regular(fd, name, APPEND_FLAGS)
        except FileNotFoundError:
            return None
        if st.st_nlink > 1:
            os.close(handle)
            return None
        return AppendFile(handle, autocommit=autocommit)

    def _copy_into(self, fd: int, name: str, staged: StagedFile) -> None:
        try:
            try:
                handle, _ = open_regular(fd, name, READ_FLAGS)
            except FileNotFoundError:
                return  # a new file: nothing to append to
            with os.fdopen(handle, "rb") as old:
                while chunk := old.read(COPY_CHUNK):
                    staged.write(chunk)
        except BaseException:
            staged.discard()
            raise

    @names_path
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

    @names_path
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

    @names_path
    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        if create_parents:
            self.makedirs(path, exist_ok=False)
            return
        with self._dir.parent(self._parts(path)) as (fd, name, _):
            if not name:
                raise FileExistsError(errno.EEXIST, "exists", path)
            os.mkdir(name, dir_fd=fd)

    @names_path
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

    @names_path
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

    @names_path
    def symlink(self, src: str, dst: str, **kwargs: Any) -> None:
        """A link at ``dst`` holding the text ``src`` (as ``os.symlink(src, dst)``; nothing is
        resolved: the jail checks where a link leads when it is used)."""
        with self._dir.parent(self._parts(dst), follow=False) as (fd, name, _):
            if not name:
                raise FileExistsError(errno.EEXIST, "exists", dst)
            os.symlink(src, name, dir_fd=fd)

    @names_path
    def link_out(self, path: str, dir_fd: int, name: str) -> None:
        """A second name, ``name`` in the open folder ``dir_fd``, for the regular file at ``path``
        (a link there is not followed), which has no other: a staged write that replaces the file
        then leaves its old content to that name, uncopied. ``EXDEV`` across filesystems,
        ``EMLINK`` when the file has other names already (someone else holds it)."""
        with self._dir.parent(self._parts(path), follow=False) as (fd, base, _):
            info = os.stat(base, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise OSError(errno.EMLINK, "not a regular file of one name", path)
            os.link(base, name, src_dir_fd=fd, dst_dir_fd=dir_fd, follow_symlinks=False)

    @names_path
    def readlink(self, path: str) -> str:
        with self._dir.parent(self._parts(path), follow=False) as (fd, name, _):
            return os.readlink(name, dir_fd=fd)

    @names_path
    def rmdir(self, path: str) -> None:
        with self._dir.parent(self._parts(path), follow=False) as (fd, name, _):
            os.rmdir(name, dir_fd=fd)

    def _rm(self, path: str) -> None:
        """Unlink a file or a link (never its target)."""
        with self._dir.parent(self._parts(path), follow=False) as (fd, name, _):
            os.unlink(name, dir_fd=fd)

    @names_path
    def rm_file(self, path: str) -> None:
        self._rm(path)

    def rm(self, path: str | list[str], recursive: bool = False, maxdepth: int | None = None) -> None:
        for one in [path] if isinstance(path, str) else path:
            self._rm_one(one, recursive)

    @names_path
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

    def sweep_temp_files(
        self, older_than: float, folders: Sequence[str] | None = None, pause: Callable[[], object] | None = None
    ) -> int:
        """Delete our temp files (``tempfiles.is_temp_name``, regular, ours, one link) older
        than ``older_than`` seconds: younger ones may belong to a write in flight. ``folders``:
        only in these (and below them), not the whole tree. ``pause``: called every
        ``SWEEP_PAUSE_EVERY`` entries (it may wait).
        """
        cutoff = time.time() - older_than
        removed = 0
        tops = [self._dir.reopen()] if folders is None else []
        for folder in folders or ():
            with contextlib.suppress(OSError):
                tops.append(self._dir.open_directory(self._parts(folder), follow=False))
        for top in tops:
            # Names and types only: an lstat for the few names of our form, not for every entry.
            for seen, visit in enumerate(walk_tree(top, stats=False), 1):
                if pause is not None and seen % SWEEP_PAUSE_EVERY == 0:
                    pause()
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
