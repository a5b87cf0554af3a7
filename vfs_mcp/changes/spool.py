"""Before-images the undo journal keeps on disk: past a few MiB in memory, the oldest
changes' file images are written, one file a change, to a private folder of the server, and
read back (checked against their sha256) only by an undo.

The folder is made on first use in the system's temp folder (``tempfile.mkdtemp``: mode 0700,
a name no one else can take), never inside a folder the server serves; each file is made
0600 with ``O_EXCL | O_NOFOLLOW``. A file goes when its change leaves the journal, the
folder when the server stops (and a folder a killed server left is removed by the next
server that spools). The writing happens on one thread of its own, after the call's reply.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import logging
import os
import queue
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace

from vfs_mcp.changes.ops import DirImage, FileImage, Image, Op, Restore, Spooled
from vfs_mcp.errors import Internal

RESIDENT_BYTES = 4 * 1024 * 1024
"""Bytes of before-images one server keeps in memory; past them the oldest go to disk."""
PREFIX = "vfs-mcp-undo-"
"""The start of a spool folder's name, then the server's process id."""
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

log = logging.getLogger("vfs_mcp")


class Unreadable(Internal):
    """A spooled before-image that cannot be read back as it was written: its change cannot be undone."""


class Spool:
    """One server's spool folder (made on first use); ``served``: the host folders the server
    serves, which the folder must not be inside."""

    def __init__(self, served: Callable[[], Iterable[str]] = tuple, parent: str | None = None) -> None:
        self.served, self.parent = served, parent
        self.folder: str | None = None
        self.refused: OSError | None = None
        """Why nothing can be spooled any more (the folder would be inside a served one)."""
        self._names = itertools.count()
        self._lock = threading.Lock()

    def keep(self, steps: list[Op]) -> tuple[list[Op], str | None]:
        """``steps`` with every file image written to one new file of the folder, and that file
        (None when they keep no file image). OSError when it cannot be written (nothing is left)."""
        if not any(isinstance(op, Restore) and _holds_bytes(op.image) for op in steps):
            return steps, None
        path = os.path.join(self._folder(), f"{next(self._names)}.img")
        fd = os.open(path, _FLAGS, 0o600)
        try:
            written = _Written(fd, path)
            kept: list[Op] = [
                replace(op, image=written.image(op.image)) if isinstance(op, Restore) else op for op in steps
            ]
        except BaseException:
            os.close(fd)
            self.discard(path)
            raise
        os.close(fd)
        return kept, path

    def _folder(self) -> str:
        with self._lock:
            if self.refused is not None:
                raise self.refused
            if self.folder is None:
                _sweep(self.parent or tempfile.gettempdir())
                self.folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=self.parent)
                _open.add(self.folder)
            real = os.path.realpath(self.folder)
            inside = [root for root in self.served() if real.startswith(root.rstrip("/") + "/")]
            if inside:
                self.refused = OSError(
                    errno.EPERM, f"the temp folder is inside the served folder {inside[0]}; set TMPDIR elsewhere"
                )
                _remove(self.folder)
                self.folder = None
                raise self.refused
            return self.folder

    def discard(self, path: str | None) -> None:
        """Remove a spooled file (its change left the journal)."""
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def close(self) -> None:
        """Remove the folder and everything in it."""
        with self._lock:
            if self.folder is not None:
                _remove(self.folder)
                self.folder = None


class _Written:
    """The file images of one change, written one after the other to the file ``fd``."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd, self.path, self.offset = fd, path, 0

    def image(self, image: Image) -> Image:
        """``image`` with its file images on disk (a method, not a closure: a recursive closure
        is a reference cycle that would keep the bytes until the collector's next full pass)."""
        if isinstance(image, FileImage):
            _write_all(self.fd, image.data)
            self.offset += len(image.data)
            digest = hashlib.sha256(image.data).hexdigest()
            return Spooled(self.path, self.offset - len(image.data), len(image.data), digest, image.mode)
        if isinstance(image, DirImage) and image.inside:
            return DirImage(image.mode, tuple((rel, self.image(inner)) for rel, inner in image.inside))
        return image


def _holds_bytes(image: Image) -> bool:
    if isinstance(image, DirImage):
        return any(_holds_bytes(inner) for _, inner in image.inside)
    return isinstance(image, FileImage)


def read(image: Spooled, shown: str) -> bytes:
    """The bytes ``image`` (of the path ``shown``) keeps; ``Unreadable`` when they are gone or
    not the ones written."""
    try:
        fd = os.open(image.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            data = os.pread(fd, image.size, image.offset)
        finally:
            os.close(fd)
    except OSError as err:
        raise Unreadable(
            f"what {shown} held, kept on disk for undo, cannot be read back ({err.strerror}): this change cannot be undone"
        ) from None
    if len(data) != image.size or hashlib.sha256(data).hexdigest() != image.sha256:
        raise Unreadable(
            f"what {shown} held, kept on disk for undo, is not what was kept: this change cannot be undone"
        )
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


_open: set[str] = set()
"""Spool folders of this process not yet removed."""


def _remove(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    _open.discard(folder)


def close_all() -> None:
    """Remove every spool folder of this process (it is about to end without its finalizers)."""
    for folder in list(_open):
        _remove(folder)


def _sweep(parent: str) -> None:
    """Remove the spool folders of this user's servers that ended without removing them (killed)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            found = re.fullmatch(rf"{PREFIX}(\d+)-\w+", entry.name)
            if found is None or int(found[1]) == os.getpid() or _alive(int(found[1])):
                continue
            # Defense in depth: only a real folder of ours, never a link someone put there.
            info = entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False) and info.st_uid == os.geteuid():
                shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


_jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_worker: list[threading.Thread] = []
_starting = threading.Lock()


def later(job: Callable[[], None]) -> None:
    """Run ``job`` on the spool's own thread, after the ones given before it."""
    with _starting:
        if not _worker:
            _worker.append(threading.Thread(target=_work, name="vfs-mcp-undo-spool", daemon=True))
            _worker[0].start()
    _jobs.put(job)


def settled() -> None:
    """Wait until every job given so far has run."""
    done = threading.Event()
    later(done.set)
    done.wait()


def _work() -> None:
    while True:
        job = _jobs.get()
        try:
            job()
        except Exception:  # a job reports its own failures; the thread must outlive any
            log.exception("undo spool: a job failed")
        del job
