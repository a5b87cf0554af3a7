"""Regular files in an open directory: opened without blocking (a FIFO, socket or device is
refused before and after the open, never waited on) and read by range with ``pread``."""

from __future__ import annotations

import errno
import os
import stat

from vfs_mcp_backends.base import NotRegularFile

NO_WAIT = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
READ_FLAGS = os.O_RDONLY | NO_WAIT
APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | NO_WAIT


def open_regular(fd: int, name: str, flags: int, st: os.stat_result | None = None) -> tuple[int, os.stat_result]:
    """Open the regular file ``name`` in ``fd`` without blocking: anything else is refused,
    before the open (``st``, its lstat, made here unless given) and after it (fstat of the
    descriptor, whatever was swapped in). Returns the descriptor and that fstat, which callers
    use rather than asking again.
    """
    st = st or os.stat(name, dir_fd=fd, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        refuse(st, name)
    handle = os.open(name, flags, dir_fd=fd)
    st = os.fstat(handle)
    if not stat.S_ISREG(st.st_mode):
        os.close(handle)
        refuse(st, name)
    return handle, st


def refuse(st: os.stat_result, name: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", name)
    raise NotRegularFile(name)


def read_range(fd: int, first: int, last: int) -> bytes:
    """Bytes ``[first, last)`` of an open file, fewer if it ends sooner: ``pread`` straight into
    the result (no file object, no buffer copy; one call for a file that does not change)."""
    if last <= first:
        return b""
    data = os.pread(fd, last - first, first)
    if not data or len(data) == last - first:
        return data
    parts = [data]
    offset = first + len(data)
    while offset < last and (more := os.pread(fd, last - offset, offset)):
        parts.append(more)
        offset += len(more)
    return b"".join(parts)
