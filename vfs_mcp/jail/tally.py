"""Bytes each call moves through the jail, and the matching work it does, counted per call for
the metrics: counts, not seconds, so a test can bound a hostile call's work on any machine.

The bytes are counted by the jail into the tally of the call's context (``CallContext.tally``,
read from the ``vfs`` it is given). The matching work is counted where an engine is called:
in matchers compiled once and shared by every call (the deny list's, a glob's) and in pure
functions given no ``vfs`` (the diff, a patch's hunks); there the running call's tally is
ambient (``counting``, set by the counted stage: docs/architecture.md, "Per-call context")."""

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
def counting(tally: Tally) -> Iterator[Tally]:
    """Count in ``tally`` the matching work the calls made inside the block (and their worker
    threads) do."""
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
