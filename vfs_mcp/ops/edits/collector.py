"""Python's cycle collector paused while an operation makes many objects that all live until
it ends (a patch placed in a 1,000,000-line file: its lines, a few objects a hunk).

Every young-generation collection meanwhile scans the young containers, the million-line
lists among them, and frees nothing: at 1,000,000 lines some 25-30 ms of a 380 ms call
(benchmarks/README.md, "Issue 50 item 6, a fourth look"). The pause is the process's (the
collector is one for all threads): calls that overlap share it, and the last one out lets the
collector run again, unless it was off before the first came in. Nothing is frozen
(``gc.freeze`` keeps objects for the process's life); cycles made meanwhile are collected
after.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_inside = 0
"""Calls inside a pause."""
_resume = False
"""Whether the collector was on when the first of them came in."""


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block (and for any other pause that overlaps it)."""
    global _inside, _resume
    with _lock:
        if not _inside:
            _resume = gc.isenabled()
            gc.disable()
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if not _inside and _resume:
                gc.enable()
