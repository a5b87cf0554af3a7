"""The undo journal: the steps that take back each change a session made, newest last.

``run`` notes every committed change of the running call (``recording``); when the call
succeeds the server keeps them as one ``Change`` in the session's journal. Undo is then a
change like any other, made of those steps: each checks its path is still as the change left
it, under the same locks, all or nothing. The journal is bounded in changes and in bytes of
what it keeps; the oldest go first, and the journal says how many went. It lives in the
server, never inside a mount.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from vfs_mcp.changes.ops import Op, Remove, Rename, Restore, image_size, written

DEFAULT_UNDO_CHANGES = 100
DEFAULT_UNDO_BYTES = 64 * 1024 * 1024


@dataclass
class Change:
    """One call's change: the steps that take it back, in the order to run them."""

    tool: str
    undo: list[Op]

    @property
    def size(self) -> int:
        return sum(image_size(op.image) for op in self.undo if isinstance(op, Restore))

    def touches(self, key: tuple[str, str]) -> bool:
        return any((t.mount.url, t.rel) == key for op in self.undo for t in written(op))

    @property
    def restored(self) -> list[str]:
        """Paths the undo puts back as they were."""
        shown: list[str] = []
        for op in self.undo:
            if isinstance(op, Rename):
                shown.append(op.dest.display)
            elif isinstance(op, Restore) and type(op.image).__name__ != "Absent":
                shown.append(op.target.display)
        return list(dict.fromkeys(shown))

    @property
    def removed(self) -> list[str]:
        """Paths the change created that the undo deletes again."""
        shown = [op.target.display for op in self.undo if isinstance(op, Remove)]
        shown += [op.source.display for op in self.undo if isinstance(op, Rename)]
        return [p for p in dict.fromkeys(shown) if p not in self.restored]


@dataclass
class Recording:
    """The changes one call committed, oldest first; ``why_not``: why it cannot be undone."""

    limit: int
    changes: list[list[Op]] = field(default_factory=list)
    why_not: str | None = None

    def note(self, undo: list[Op] | None, why_not: str | None) -> None:
        if undo is None:
            self.why_not = self.why_not or why_not or "it could not be recorded"
        else:
            self.changes.append(undo)

    def steps(self) -> list[Op]:
        """The steps that take back the whole call, newest change first."""
        return [op for undo in reversed(self.changes) for op in undo]


_recording: ContextVar[Recording | None] = ContextVar("vfs_mcp_recording", default=None)


@contextmanager
def recording(limit: int = DEFAULT_UNDO_BYTES) -> Iterator[Recording]:
    """Collect the changes the calls inside commit (and their threads)."""
    record = Recording(limit)
    token = _recording.set(record)
    try:
        yield record
    finally:
        _recording.reset(token)


def current() -> Recording | None:
    return _recording.get()


class Journal:
    """One session's changes, newest last, bounded in number and in bytes of before-images."""

    def __init__(self, changes: int = DEFAULT_UNDO_CHANGES, size: int = DEFAULT_UNDO_BYTES) -> None:
        self.limit_changes, self.limit_bytes = changes, size
        self.changes: deque[Change] = deque()
        self.size = 0
        self.dropped = 0

    def add(self, change: Change) -> None:
        self.changes.append(change)
        self.size += change.size
        while len(self.changes) > self.limit_changes or self.size > self.limit_bytes:
            self.size -= self.changes.popleft().size
            self.dropped += 1

    def latest(self, keys: set[tuple[str, str]] | None = None) -> Change | None:
        """The newest change (touching one of ``keys``, when given)."""
        for change in reversed(self.changes):
            if keys is None or any(change.touches(key) for key in keys):
                return change
        return None

    def remove(self, change: Change) -> None:
        self.changes.remove(change)
        self.size -= change.size


def session_journal(caches: dict[str, Any], limit: int) -> Journal:
    """The calling session's journal of at most ``limit`` changes (outside sessions, the one
    kept in ``caches``, the server's)."""
    from vfs_mcp.sessions import state_of

    def server_wide() -> Journal:
        kept: Journal = caches.setdefault("undo", Journal(limit))
        return kept

    return state_of("undo-journal", lambda: Journal(limit), server_wide)
