"""Staged writes on a local folder, in fsspec's file protocol: ``write``, ``close``, then
``commit`` (the new content becomes visible in one step) or ``discard`` (it never does).

With ``autocommit`` (plain ``fs.open(path, "wb")``, ``pipe_file``) closing commits, and so does
dropping the file unclosed (``StagedIO``); closing it on the way out of a failure discards.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from vfs_mcp_backends.scopes import ensure_wanted
from vfs_mcp_backends.tempfiles import new_temp_name

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

COPY_CHUNK = 4 << 20
"""Bytes moved at a time by copies and hashes: memory stays bounded whatever the file size."""

TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _read_umask()  # read once at import: os.umask is process-wide and not thread-safe
DEFAULT_MODE = 0o666 & ~UMASK


def write_all(fd: int, data: Buffer) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view) :]


IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 16
"""Buffers one ``writev`` takes (1,024 on Linux; 16 is the least POSIX allows)."""


def write_parts(fd: int, parts: Sequence[bytes | memoryview]) -> int:
    """``parts`` (bytes, or views of bytes) one after the other, ``IOV_MAX`` of them a system
    call and never joined into one copy (a patched 24 MB file is 20,000 of them: its join and
    the pages of its copy cost more than its write, benchmarks/README.md); their size. A short
    write goes on from where it stopped."""
    size = 0
    for first in range(0, len(parts), IOV_MAX):
        group = parts[first : first + IOV_MAX]
        written = os.writev(fd, group)
        size += written
        if written < sum(map(len, group)):
            for part in group:
                if written >= len(part):
                    written -= len(part)
                    continue
                write_all(fd, memoryview(part)[written:])
                size += len(part) - written
                written = 0
    return size


class StagedIO(io.RawIOBase):
    """What every staged writer shares: fsspec's file protocol (``close``, then ``commit`` or
    ``discard``) and what ``io.TextIOWrapper``, ``zipfile``, pyarrow and fsspec's compression
    wrappers ask of a binary file (``writable``, ``tell``, ``flush``, ``closed``).

    A file closed on the way out of a failure discards, whoever closes it: its own ``with``
    block, a text or compression wrapper's, fsspec's ``OpenFile`` (``fsspec.open``, whose
    ``__exit__`` closes whatever happened), pandas' handles. It knows by the exception
    propagating while it closes (one raised since it was opened). A file dropped unclosed
    commits when it is collected if it commits on close (as fsspec's own files do): fsspec's
    compression wrappers never close the file they wrap; one that waits for an explicit
    ``commit`` (``autocommit=False``) is discarded instead.
    """

    autocommit: bool
    _done = False
    _position = 0
    _handled_at_open: BaseException | None = None

    def __new__(cls, *args: object, **kwargs: object) -> StagedIO:
        self = super().__new__(cls)
        self._handled_at_open = sys.exc_info()[1]  # opened inside an except block: not a failure of ours
        return self

    def close(self) -> None:
        """Finish the content and, with ``autocommit``, commit it; discard it instead when
        the file is closed on the way out of a failure (``_failing``)."""
        if self._done:
            return
        if self.autocommit and self._failing():
            self.discard()
        else:
            self._finish()

    def _failing(self) -> bool:
        """Whether an exception raised since the file was opened is propagating now."""
        now = sys.exc_info()[1]
        return now is not None and now is not self._handled_at_open

    def _finish(self) -> None:
        """``close`` when nothing failed."""
        raise NotImplementedError

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()

    def __del__(self) -> None:
        if self._done:
            return
        with contextlib.suppress(Exception):
            if self.autocommit:
                self.close()
            else:
                self.discard()

    def readable(self) -> bool:
        return False

    def writable(self) -> bool:
        return not self._done

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        """Where the next byte goes: the bytes written so far (after the old ones, appending)."""
        return self._position

    def _mark_closed(self) -> None:
        """Say ``closed`` (io's flag), however the content ended: finished, committed or discarded."""
        io.RawIOBase.close(self)

    def commit(self) -> None:
        raise NotImplementedError

    def discard(self) -> None:
        raise NotImplementedError


class SpooledFile(StagedIO):
    """A write whose bytes gather in a spooled temp file (memory up to ``COPY_CHUNK``, then
    disk) and land whole at ``commit`` (``close``, with ``autocommit``), never before:
    ``_land`` is what a commit does with them; ``discard`` drops them. ``start``: bytes it
    holds from the first (an append's old content), ``position``: where it starts otherwise."""

    def __init__(self, *, autocommit: bool, start: bytes = b"", position: int = 0) -> None:
        self.autocommit = autocommit
        self._spool = tempfile.SpooledTemporaryFile(max_size=COPY_CHUNK)  # noqa: SIM115  # closed at commit or discard
        self._spool.write(start)
        self._position = position + len(start)

    def write(self, data: Buffer) -> int:
        if self.closed:
            raise ValueError("write to a closed file")
        size = self._spool.write(data)
        self._position += size
        return size

    def _finish(self) -> None:
        self._mark_closed()
        if self.autocommit:
            self.commit()

    def commit(self) -> None:
        if self._done:
            return
        self._mark_closed()
        self._done = True
        spool = self._spool
        try:
            spool.seek(0)
            self._land(spool.read())
        finally:
            spool.close()

    def _land(self, data: bytes) -> None:
        """Put the whole content where it goes (raising what the store raises)."""
        raise NotImplementedError

    def discard(self) -> None:
        if self._done:
            return
        self._done = True
        self._spool.close()
        self._mark_closed()


class StagedFile(StagedIO):
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

    def write(self, data: Buffer) -> int:
        if self._fd is None:
            raise ValueError("write to a closed file")
        size = memoryview(data).nbytes
        write_all(self._fd, data)
        self._position += size
        return size

    def writelines(self, lines: Iterable[Buffer]) -> None:
        """``lines`` (bytes, or views of bytes) one after the other, many a system call (``write_parts``)."""
        if self._fd is None:
            raise ValueError("write to a closed file")
        self._position += write_parts(self._fd, list(lines))  # type: ignore[arg-type]

    def _finish(self) -> None:
        """Finish the content (mode, fsync); with ``autocommit`` also commit it."""
        if not self.closed:
            try:
                assert self._fd is not None
                os.fchmod(self._fd, self._mode)
                os.fsync(self._fd)
            except BaseException:
                self.discard()
                raise
            os.close(self._fd)
            self._fd = None
            self._mark_closed()
        if self.autocommit:
            self.commit()

    def commit(self) -> None:
        if self._done:
            return
        if not self.closed:
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
        self._mark_closed()


class AppendFile(StagedIO):
    """Bytes to append to an open regular file; written (and fsynced) at ``commit``."""

    def __init__(self, fd: int, *, autocommit: bool) -> None:
        self.autocommit = autocommit
        self._fd = fd
        self._pending: list[bytes] = []
        self._position = os.fstat(fd).st_size

    def write(self, data: Buffer) -> int:
        if self.closed:
            raise ValueError("write to a closed file")
        chunk = bytes(data)
        self._pending.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def _finish(self) -> None:
        if self.autocommit:
            self.commit()
        else:
            self._mark_closed()

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
        self._mark_closed()
