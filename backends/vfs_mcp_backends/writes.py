"""Staged writes on a local folder, in fsspec's file protocol: ``write``, ``close``, then
``commit`` (the new content becomes visible in one step) or ``discard`` (it never does).

With ``autocommit`` (plain ``fs.open(path, "wb")``, ``pipe_file``) closing commits; leaving a
``with`` block on an exception, or dropping the file unclosed, discards.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from types import TracebackType

from vfs_mcp_backends.base import ensure_wanted
from vfs_mcp_backends.tempfiles import new_temp_name

COPY_CHUNK = 4 << 20
"""Bytes moved at a time by copies and hashes: memory stays bounded whatever the file size."""

TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _read_umask()  # read once at import: os.umask is process-wide and not thread-safe
DEFAULT_MODE = 0o666 & ~UMASK


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Staged:
    """What both writers share: the protocol's states and the context manager."""

    autocommit: bool
    _done = False

    def __enter__(self) -> _Staged:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()

    def __del__(self) -> None:
        if not self._done:
            self.discard()  # never commit from the garbage collector

    def writable(self) -> bool:
        return not self._done

    def close(self) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def discard(self) -> None:
        raise NotImplementedError


class StagedFile(_Staged):
    """The new content of ``name`` (in the open directory ``dir_fd``), written to a temp file
    beside it; ``commit`` fsyncs and renames it over the name.

    The mode is ``permissions``, else the old file's, else the default for new files. With
    ``exclusive`` the commit fails with ``FileExistsError`` if the name exists by then.
    """

    def __init__(
        self, dir_fd: int, name: str, *, autocommit: bool, exclusive: bool = False, permissions: int | None = None
    ) -> None:
        self.autocommit = autocommit
        self._exclusive = exclusive
        self._name = name
        self._closed = False
        self._dir = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
        self._fd: int | None = None
        try:
            self._mode = permissions if permissions is not None else self._old_mode()
            self._temp = new_temp_name()
            self._fd = os.open(self._temp, TEMP_FLAGS, 0o600, dir_fd=self._dir)
        except BaseException:
            os.close(self._dir)
            self._done = True
            raise

    def _old_mode(self) -> int:
        try:
            st = os.stat(self._name, dir_fd=self._dir, follow_symlinks=False)
        except FileNotFoundError:
            return DEFAULT_MODE
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", self._name)
        if self._exclusive:
            raise FileExistsError(errno.EEXIST, "already exists", self._name)
        return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else DEFAULT_MODE

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._fd is None:
            raise ValueError("write to a closed file")
        write_all(self._fd, data)
        return len(data)

    def close(self) -> None:
        """Finish the content (mode, fsync); with ``autocommit`` also commit it."""
        if self._done:
            return
        if not self._closed:
            try:
                assert self._fd is not None
                os.fchmod(self._fd, self._mode)
                os.fsync(self._fd)
            except BaseException:
                self.discard()
                raise
            os.close(self._fd)
            self._fd = None
            self._closed = True
        if self.autocommit:
            self.commit()

    def commit(self) -> None:
        if self._done:
            return
        if not self._closed:
            autocommit, self.autocommit = self.autocommit, False
            self.close()
            self.autocommit = autocommit
        try:
            ensure_wanted()
            if self._exclusive:
                os.link(self._temp, self._name, src_dir_fd=self._dir, dst_dir_fd=self._dir, follow_symlinks=False)
                os.unlink(self._temp, dir_fd=self._dir)
            else:
                os.replace(self._temp, self._name, src_dir_fd=self._dir, dst_dir_fd=self._dir)
        except BaseException:
            self.discard()
            raise
        with contextlib.suppress(OSError):
            os.fsync(self._dir)
        os.close(self._dir)
        self._done = True

    def discard(self) -> None:
        if self._done:
            return
        self._done = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        with contextlib.suppress(OSError):
            os.unlink(self._temp, dir_fd=self._dir)
        os.close(self._dir)


class AppendFile(_Staged):
    """Bytes to append to an open regular file; written (and fsynced) at ``commit``."""

    def __init__(self, fd: int, *, autocommit: bool) -> None:
        self.autocommit = autocommit
        self._fd = fd
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self._pending.append(bytes(data))
        return len(data)

    def close(self) -> None:
        if self.autocommit:
            self.commit()

    def commit(self) -> None:
        if self._done:
            return
        try:
            ensure_wanted()
            for data in self._pending:
                write_all(self._fd, data)
            os.fsync(self._fd)
        finally:
            self.discard()

    def discard(self) -> None:
        if self._done:
            return
        self._done = True
        self._pending = []
        os.close(self._fd)
