"""Bytes each call moves through the jail, and the matching work it does, counted per call for
the metrics: counts, not seconds, so a test can bound a hostile call's work on any machine."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass
class Tally:
    """Bytes one call read and wrote through the jail, and the matching work it did (``counting``)."""

    read: int = 0
    written: int = 0
    steps: int = 0
    """Matching work: characters handed to a matching engine (RE2 for grep and name globs, the
    fuzzy matcher's windows), lines compared placing a patch's hunks, a diff's steps."""
    largest: int = 0
    """The most characters handed to one engine call: work done in one piece, holding the
    interpreter lock, while other clients wait."""


_tally: ContextVar[Tally | None] = ContextVar("vfs_mcp_tally", default=None)


@contextlib.contextmanager
def counting() -> Iterator[Tally]:
    """Count the bytes the calls made inside the block (and their worker threads) move."""
    tally = Tally()
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


class Counted:
    """A reader that counts what is read through it (everything else is the reader's own)."""

    def __init__(self, handle: Any, count: Callable[[int], None]) -> None:
        self._handle, self._count = handle, count

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._handle.read(size)
        self._count(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        done = int(self._handle.readinto(buffer) or 0)
        self._count(done)
        return done

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def count_read(size: int) -> None:
    tally = _tally.get()
    if tally is not None:
        tally.read += size


def count_written(size: int) -> None:
    tally = _tally.get()
    if tally is not None:
        tally.written += size


def count_steps(steps: int) -> None:
    """Matching work done a little at a time (the interpreter lock changes hands meanwhile)."""
    tally = _tally.get()
    if tally is not None:
        tally.steps += steps


def count_matched(size: int) -> None:
    """``size`` characters handed to a matching engine in one call."""
    tally = _tally.get()
    if tally is not None:
        tally.steps += size
        tally.largest = max(tally.largest, size)
