"""Calls whose changes must not land once their caller stopped waiting: ``commit_scope``
around a call, ``ensure_wanted`` right before a write becomes visible (the write path's
commit, and stores that stage writes), ``Abandoned`` when the scope has ended. Which change a
write belongs to (``labelled``). And the jobs a change runs on threads of their own from its
first wait for its store (``later``, ``waits``, ``waiting``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Abandoned(Exception):
    """A write was about to become visible for a call whose caller has stopped waiting."""


_stopped: ContextVar[threading.Event | None] = ContextVar("vfs_mcp_stopped", default=None)


@contextlib.contextmanager
def commit_scope() -> Iterator[threading.Event]:
    """Run calls whose changes must not land once their caller stopped waiting.

    Calls made inside the block, or in worker threads started from it (they copy the
    context), commit nothing after the block is left: a call that was cancelled or timed
    out and whose thread runs on gets ``Abandoned`` at its next commit, so it never changes
    the filesystem after it was reported failed.
    """
    stop = threading.Event()
    token = _stopped.set(stop)
    try:
        yield stop
    finally:
        stop.set()
        _stopped.reset(token)


def ensure_wanted() -> None:
    """Raise ``Abandoned`` when the current call's scope has ended: called right before a
    write becomes visible (a rename, a put), by the caller and by stores that stage writes.
    """
    stop = _stopped.get()
    if stop is not None and stop.is_set():
        raise Abandoned


_label: ContextVar[str | None] = ContextVar("vfs_mcp_label", default=None)


@contextlib.contextmanager
def labelled(label: str) -> Iterator[None]:
    """Writes made inside the block belong to the change ``label`` (its id): a store that keeps
    what wrote each path (a review mount's layer) keeps it (``current_label``)."""
    token = _label.set(label)
    try:
        yield
    finally:
        _label.reset(token)


def current_label() -> str | None:
    """The change the writes made now belong to (``labelled``), if any."""
    return _label.get()


class Later(Generic[T]):
    """A job for a thread of its own, started when the change that made it first waits for its
    store (``waiting``), or when its result is first asked for; never, once forgone first."""

    def __init__(self, pool: Executor, job: Callable[[], T]) -> None:
        self._pool, self._job = pool, job
        self._future: Future[T] | None = None
        self._forgone = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._future is None and not self._forgone:
                self._future = self._pool.submit(self._job)

    def result(self) -> T:
        self.start()
        if self._future is None:
            raise RuntimeError("the result of a forgone job")
        return self._future.result()

    def forgo(self) -> None:
        """Never start it; when it was started, wait for it to end (whatever it raises is its own)."""
        with self._lock:
            self._forgone = True
            future = self._future
        if future is not None:
            with contextlib.suppress(Exception):
                future.result()


_later: ContextVar[list[Later[Any]] | None] = ContextVar("vfs_mcp_later", default=None)


def later(pool: Executor, job: Callable[[], T]) -> Later[T]:
    """``job`` on ``pool``: inside ``waits``, from the change's first wait for its store; else at once.

    A thread woken while the change still computes may be put on the change's own core (on the
    2-core machine measured, in every call traced: benchmarks/README.md), and the change waits
    for it: a 1 MB edit waited a millisecond for its hashes. Woken as the change waits for the
    disk or the network, it runs on the core the change leaves idle."""
    deferred = Later(pool, job)
    made = _later.get()
    if made is None:
        deferred.start()
    else:
        made.append(deferred)
    return deferred


@contextlib.contextmanager
def waits() -> Iterator[None]:
    """Jobs made by ``later`` inside the block start at its first ``waiting`` (those left when it
    ends start only when asked for)."""
    token = _later.set([])
    try:
        yield
    finally:
        _later.reset(token)


def waiting() -> None:
    """The current change is about to wait for its store (a file's fsync, a request): the jobs
    it made so far start."""
    made = _later.get()
    if made:
        jobs, made[:] = list(made), []
        for job in jobs:
            job.start()
