"""Calls whose changes must not land once their caller stopped waiting: ``commit_scope``
around a call, ``ensure_wanted`` right before a write becomes visible (the write path's
commit, and stores that stage writes), ``Abandoned`` when the scope has ended. And which
change a write belongs to (``labelled``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar


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
