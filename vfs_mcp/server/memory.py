"""The server's heap: big blocks kept for the next call while calls come, given back once the
server is idle.

glibc maps a block of ``MMAP_THRESHOLD`` or more fresh, and unmaps it when freed; a smaller
block comes from the heap and goes back to it. A call that reads, patches or returns a file of
a few MB allocates and frees many such blocks (the bytes read, their text, a line list, the
new bytes, the reply's copies). Fixed at 4 MiB, each of them was mapped fresh and first
touched page by page: 40,000 page faults a patch of 24 MB, 6,600 a 10 MB read. At 32 MiB they
stay in the heap and the next block reuses their pages. Fixed, not glibc's own sliding
threshold: that one follows the biggest block freed, and would keep the heap as large as the
biggest file ever read.

What a call left free in the heap is given back once no call has come for ``IDLE`` seconds
(``Idle``, from the call pipeline's ``calls.idle`` stage): ``malloc_trim`` over every malloc
arena, on the housekeeping thread. Calls that come one after another (a script, a benchmark)
reuse the pages; a server waiting for its client keeps no more than its live data. Figures in
benchmarks/README.md, "Issue 50 item 6, a fifth look".
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable

MMAP_THRESHOLD = 32 * 1024 * 1024
"""Blocks at least this big are mapped, and given back to the system when freed."""
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
"""Free bytes at the heap's top it keeps (else fixed at 128 KiB once the threshold is: every free trims)."""
IDLE = 1.0
"""Seconds without a call after which the heap's free pages go back to the system."""

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


def _glibc() -> ctypes.CDLL | None:
    if sys.platform != "linux":
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018  (musl has no such function)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


def settle() -> None:
    """Fix the thresholds (``MMAP_THRESHOLD``, ``TRIM_THRESHOLD``) for this process."""
    if _LIBC is not None:
        _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        _LIBC.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def give_back() -> bool:
    """The heap's free pages returned to the system (every arena's); whether there is a heap to trim."""
    if _LIBC is None:
        return False
    _LIBC.malloc_trim(0)
    return True


Schedule = Callable[[float, Callable[[], None]], object]
"""Run a job after so many seconds (the event loop's ``call_later``)."""


class Idle:
    """Counts the calls under way; once the last one is out, ``schedule`` is asked to check
    again after ``IDLE`` seconds (one check waits at a time, so a call costs two counts), and
    the check gives the heap back (``give_back``, on the housekeeping thread) when no call came
    meanwhile, or waits ``IDLE`` seconds more if calls came and went. ``trims``: how many
    times it gave it back."""

    def __init__(self, give: Callable[[], object] = give_back) -> None:
        self.give = give
        self.running = 0
        self.calls = 0
        """Calls begun so far: a check that sees another number than when it was asked came too early."""
        self.trims = 0
        self._waiting: int | None = None
        """``calls`` when the waiting check was asked for; None when none waits."""
        self._lock = threading.Lock()

    def began(self) -> None:
        with self._lock:
            self.running += 1
            self.calls += 1

    def ended(self, schedule: Schedule) -> None:
        with self._lock:
            self.running -= 1
            if self.running or self._waiting is not None:
                return
            self._waiting = self.calls
        schedule(IDLE, lambda: self.due(schedule))

    def due(self, schedule: Schedule) -> None:
        """``IDLE`` seconds after it was asked for: the heap given back if no call came since."""
        with self._lock:
            asked, self._waiting = self._waiting, None
            if self.running:  # the call's end asks again
                return
            again = asked != self.calls  # calls came and went: a whole ``IDLE`` from now
            if again:
                self._waiting = self.calls
        if again:
            schedule(IDLE, lambda: self.due(schedule))
            return
        # Not imported at start: the write path's package (the warm-up imports it by now).
        from vfs_mcp.changes.state import housekeeping

        housekeeping.later(self._trim, "giving memory back")

    def _trim(self) -> None:
        with self._lock:
            if self.running:
                return
        if self.give():
            self.trims += 1


IDLE_SERVER = Idle()
"""The process's one count (its heap is one)."""
