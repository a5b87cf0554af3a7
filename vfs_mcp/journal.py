"""The undo journal: what each changing call did to which files, so it can be taken back.

While a call runs, ``recording`` collects the before-image of every file the jailed
filesystem is about to change (``JailedFS`` calls ``remember`` from its write, put, delete
and rename steps): its bytes and mode, or that it did not exist. When the call succeeds the
server stores one ``Change`` in the session's journal with each file's state after it
(sha256, or gone). ``undo`` restores a change only where every file is still exactly as the
call left it. The journal is bounded in changes and bytes; the oldest go first, and the
journal says how many went. It lives in the server, never inside a mount.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

DEFAULT_UNDO_CHANGES = 100
DEFAULT_UNDO_BYTES = 64 * 1024 * 1024


@dataclass
class FileState:
    """One file of a change: where, what it held before (None: absent), and its state after."""

    key: tuple[str, str]
    """(mount URL, path inside the mount)."""
    display: str
    before: bytes | None
    mode: int | None = None
    after: str | None = None
    """sha256 of the content the call left; None when the call left no file there."""
    settled: bool = False
    """``after`` is the sha256 of the bytes the call's last write put there (``wrote``), so
    nothing needs reading back; any later change of the file unsettles it."""


@dataclass
class Change:
    tool: str
    files: list[FileState]

    @property
    def size(self) -> int:
        return sum(len(f.before or b"") for f in self.files)


@dataclass
class Recording:
    """The before-images of one call, first touch of each path only."""

    limit: int
    files: dict[tuple[str, str], FileState] = field(default_factory=dict)
    kept_bytes: int = 0
    unrecordable: bool = False
    """Set when some before-image could not be kept (too large, unreadable): the call is not undoable."""

    def wants(self, key: tuple[str, str]) -> bool:
        return key not in self.files and not self.unrecordable

    def keep(self, state: FileState) -> None:
        size = len(state.before or b"")
        if self.kept_bytes + size > self.limit:
            self.give_up()  # a change larger than the journal cannot be undone
            return
        self.files[state.key] = state
        self.kept_bytes += size

    def give_up(self) -> None:
        """This call's change will not be undoable: keep none of it."""
        self.unrecordable = True
        self.files.clear()
        self.kept_bytes = 0


_recording: ContextVar[Recording | None] = ContextVar("vfs_mcp_recording", default=None)


@contextmanager
def recording(limit: int) -> Iterator[Recording]:
    """Collect the before-images of the changes the calls inside make (and their threads)."""
    record = Recording(limit)
    token = _recording.set(record)
    try:
        yield record
    finally:
        _recording.reset(token)


def touched(key: tuple[str, str]) -> bool:
    """The running call is about to change ``key``: whether it is being recorded and ``key``
    has no before-image in it yet. A state the call settled before is no longer settled."""
    record = _recording.get()
    if record is None:
        return False
    known = record.files.get(key)
    if known is not None:
        known.settled = False
    return record.wants(key)


def recorded(key: tuple[str, str]) -> bool:
    """Whether the running call keeps a before-image of ``key``."""
    record = _recording.get()
    return record is not None and key in record.files


def wrote(key: tuple[str, str], digest: str) -> None:
    """The running call's write at ``key`` is done, its bytes hashing to ``digest``."""
    record = _recording.get()
    state = record.files.get(key) if record is not None else None
    if state is not None:
        state.after, state.settled = digest, True


def remember(
    key: tuple[str, str], display: str, size: int, read: Callable[[], tuple[bytes | None, int | None]]
) -> None:
    """Note ``key``'s before-image, if a call is being recorded and it is its first touch.
    ``size``: bytes it holds (a file larger than the journal is never read: not undoable);
    ``read`` gives (content or None when absent, mode)."""
    record = _recording.get()
    if record is None or not record.wants(key):
        return
    if size > record.limit:
        record.give_up()
        return
    try:
        before, mode = read()
    except Exception:  # unreadable (swapped for a FIFO, gone): the call goes on, not undoable
        record.give_up()
        return
    record.keep(FileState(key, display, before, mode))


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

    def latest(self, key: tuple[str, str] | None = None) -> Change | None:
        """The newest change (touching ``key``, when given)."""
        for change in reversed(self.changes):
            if key is None or any(f.key == key for f in change.files):
                return change
        return None

    def remove(self, change: Change) -> None:
        self.changes.remove(change)
        self.size -= change.size


DIRECTORY = "(a folder)"
"""The ``after`` of a path the call left as a folder (a folder moved or copied there)."""


def session_journal(caches: dict[str, Any], limit: int) -> Journal:
    """The calling session's journal of at most ``limit`` changes (outside sessions, the one
    kept in ``caches``, the server's)."""
    from vfs_mcp.sessions import state_of

    def server_wide() -> Journal:
        kept: Journal = caches.setdefault("undo", Journal(limit))
        return kept

    return state_of("undo-journal", lambda: Journal(limit), server_wide)
