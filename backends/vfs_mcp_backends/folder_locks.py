"""Folder locks for writers: shared on the folders above a change, exclusive on the folders it
changes, so a change to a whole tree (a recursive delete, a folder moved back) holds off every
writer inside it, and two writers in different folders never wait for each other.

``Folders`` maps a folder (an fsspec path) to whether it is held exclusively. In this process
each folder has a shared/exclusive lock of its own, kept only while someone holds or waits for
it; folders are taken in name order, so two changes never wait for each other in a circle. A
wait is bounded (``LockBusy``) and gives up as soon as the call that waits is given up.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping

from fsspec import AbstractFileSystem

from vfs_mcp_backends.scopes import ensure_wanted

Folders = Mapping[str, bool]
"""Folder -> held exclusively (True) or shared (False)."""

LOCK_WAIT = 10.0
"""Seconds a change waits for a folder another writer holds before it gives up (CONFLICT)."""
LOCK_SLICE = 0.05
"""Seconds between checks that a call waiting for a lock is still wanted."""


class LockBusy(Exception):
    """A folder stayed locked by another writer for the whole wait; nothing was changed."""

    def __init__(self, folder: str, wait: float) -> None:
        super().__init__(folder, wait)
        self.folder, self.wait = folder, wait


class _SharedLock:
    """Many shared holders or one exclusive one."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self.users = 0

    def acquire(self, exclusive: bool, timeout: float) -> bool:
        with self._cond:
            free = self._cond.wait_for(lambda: not self._exclusive and not (exclusive and self._shared), timeout)
            if free:
                if exclusive:
                    self._exclusive = True
                else:
                    self._shared += 1
            return free

    def release(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._exclusive = False
            else:
                self._shared -= 1
            self._cond.notify_all()


_locks: dict[tuple[int, str], _SharedLock] = {}
_guard = threading.Lock()


def deadline_of(wait: float | None) -> tuple[float, float]:
    """(the wait, when it ends)."""
    wait = LOCK_WAIT if wait is None else wait
    return wait, time.monotonic() + wait


@contextlib.contextmanager
def held_here(fs: AbstractFileSystem, folders: Folders, wait: float | None = None) -> Iterator[None]:
    """``folders`` held against the other writers of this process (see the module docstring)."""
    wait, deadline = deadline_of(wait)
    with contextlib.ExitStack() as stack:
        for folder in sorted(folders):
            stack.enter_context(_held(fs, folder, folders[folder], deadline, wait))
        yield


@contextlib.contextmanager
def _held(fs: AbstractFileSystem, folder: str, exclusive: bool, deadline: float, wait: float) -> Iterator[None]:
    key = (id(fs), folder)
    with _guard:
        lock = _locks.setdefault(key, _SharedLock())
        lock.users += 1
    try:
        while not lock.acquire(exclusive, min(LOCK_SLICE, max(0.0, deadline - time.monotonic()))):
            ensure_wanted()  # a call given up while it waits stops waiting
            if time.monotonic() >= deadline:
                raise LockBusy(folder, wait)
        try:
            yield
        finally:
            lock.release(exclusive)
    finally:
        with _guard:
            lock.users -= 1
            if not lock.users:
                del _locks[key]
