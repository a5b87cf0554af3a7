"""The housekeeping thread: what the state store's upkeep can leave for after the call that
made it due — retention letting the oldest records go (``timeline.Timeline.trim``) — so a call
answers without it. One thread, in the order given; it starts with the first job, and the
interpreter waits for what it was given before it ends.

Not the sweep of what dead instances left: ``LocalState`` makes it at the store's opening, where
it finds them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger("vfs_mcp")

_THREAD = ThreadPoolExecutor(1, thread_name_prefix="vfs-mcp-housekeeping")


def later(job: Callable[[], None], what: str) -> Future[None] | None:
    """``job`` queued (what it raises is logged as ``what`` failing: the call that queued it has
    answered, and the next one that needs it tries again); None once the interpreter is ending
    and no thread takes work."""

    def logged() -> None:
        try:
            job()
        except Exception as err:
            log.warning("%s failed: %s", what, err)

    try:
        return _THREAD.submit(logged)
    except RuntimeError:
        return None


def settle() -> None:
    """Wait until what was queued so far is done."""
    done = later(lambda: None, "waiting")
    if done is not None:
        done.result()
