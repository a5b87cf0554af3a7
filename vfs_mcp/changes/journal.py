"""The undo journal: the steps that take back each change a session made, newest last.

``run`` notes every committed change of the running call (``recording``); when the call
succeeds the server keeps them as one ``Change`` in the session's journal. Undo is then a
change like any other, made of those steps: each checks its path is still as the change left
it, under the same locks, all or nothing. The journal is bounded in changes and in bytes of
what it keeps; the oldest go first, and the journal says how many went. It lives in the
server, never inside a mount: the newest before-images in memory, up to a few MiB a server,
the older ones in a private folder on disk (``spool``).
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vfs_mcp.changes import spool
from vfs_mcp.changes.ops import Op, Remove, Rename, Restore, image_size, written
from vfs_mcp.config import DEFAULT_SERVER_UNDO_BYTES
from vfs_mcp.config import DEFAULT_UNDO_BYTES as DEFAULT_UNDO_BYTES  # the journal's bound, kept in config

if TYPE_CHECKING:
    from vfs_mcp.jail.filesystem import JailedFS

log = logging.getLogger("vfs_mcp")

DEFAULT_UNDO_CHANGES = 100


@dataclass(eq=False)
class Change:
    """One call's change: the steps that take it back, in the order to run them."""

    tool: str
    undo: list[Op]
    spooled: str | None = None
    """The file that keeps its before-images on disk (``spool``), once they are there."""

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


class Ledger:
    """One undo budget for the whole server: the before-images every session's journal keeps
    count against it, and past it the oldest change of any session goes (that session's
    journal says how many it lost). A session's own journal is bounded inside it.

    Of what it keeps, at most ``resident`` bytes stay in memory: past them the oldest changes'
    images go to ``spool``'s folder, on its own thread. A change whose images cannot be
    written there (a full disk) goes, with the older ones of its journal, as the budget's do."""

    def __init__(
        self,
        limit: int = DEFAULT_SERVER_UNDO_BYTES,
        resident: int = spool.RESIDENT_BYTES,
        keeper: spool.Spool | None = None,
    ) -> None:
        self.limit, self.resident_limit = limit, resident
        self.size = 0
        self.resident = 0
        """Bytes of the images kept in memory."""
        self.lock = threading.RLock()
        self.spool = keeper or spool.Spool()
        self._kept: deque[tuple[weakref.ref[Journal], Change]] = deque()
        self._in_memory: dict[Change, None] = {}  # oldest first
        self._spooling = self._warned = False
        weakref.finalize(self, self.spool.close)

    def charge(self, journal: Journal, change: Change) -> None:
        with self.lock:
            self._kept.append((weakref.ref(journal), change))
            self.size += change.size
            if change.size:
                self._in_memory[change] = None
                self.resident += change.size
            while self.size > self.limit and self._kept:
                owner, oldest = self._kept.popleft()
                self._let_go(oldest)
                kept_by = owner()
                if kept_by is not None and oldest in kept_by.changes:
                    kept_by.changes.remove(oldest)
                    kept_by.size -= oldest.size
                    kept_by.dropped += 1
            if self.resident > self.resident_limit and not self._spooling:
                self._spooling = True
                spool.later(functools.partial(_spool_past_resident, weakref.ref(self)))

    def release(self, change: Change) -> None:
        with self.lock:
            for index, (_, kept) in enumerate(self._kept):
                if kept is change:
                    del self._kept[index]
                    self._let_go(change)
                    return

    def _let_go(self, change: Change) -> None:
        """``change`` left the ledger: its images are no longer kept, in memory or on disk."""
        self.size -= change.size
        if change in self._in_memory:
            del self._in_memory[change]
            self.resident -= change.size
        self.spool.discard(change.spooled)

    def forget(self) -> None:
        """Let go of the changes of journals that are gone (sessions that ended)."""
        with self.lock:
            for owner, change in list(self._kept):
                if owner() is None:
                    self.release(change)

    def spool_past_resident(self) -> None:
        """Write the oldest changes' images to disk until those in memory are within ``resident``."""
        while True:
            with self.lock:
                if self.resident <= self.resident_limit or not self._in_memory:
                    self._spooling = False
                    return
                change = next(iter(self._in_memory))
                steps = list(change.undo)
            try:
                kept, path = self.spool.keep(steps)
            except OSError as err:
                if not self._warned:
                    self._warned = True
                    log.warning("undo: before-images cannot be kept on disk (%s): the oldest changes are dropped", err)
                self._unkept(change)
                continue
            with self.lock:
                if change in self._in_memory:
                    del self._in_memory[change]
                    change.undo, change.spooled = kept, path
                    self.resident -= change.size
                else:  # it left the journal meanwhile
                    self.spool.discard(path)

    def _unkept(self, change: Change) -> None:
        """Drop ``change``, and the older changes of its journal, as the budget would."""
        with self.lock:
            owner = next((owner() for owner, kept in self._kept if kept is change), None)
            if owner is None or change not in owner.changes:
                self.release(change)
                return
            while owner.changes:
                gone = owner.changes.popleft()
                owner.size -= gone.size
                owner.dropped += 1
                self.release(gone)
                if gone is change:
                    return


def _spool_past_resident(ledger: weakref.ref[Ledger]) -> None:
    kept = ledger()  # a ledger let go meanwhile has nothing left to write
    if kept is not None:
        kept.spool_past_resident()


class Journal:
    """One session's changes, newest last, bounded in number and in bytes of before-images
    (and, with a ``ledger``, by the server's budget shared with every other session)."""

    def __init__(
        self, changes: int = DEFAULT_UNDO_CHANGES, size: int = DEFAULT_UNDO_BYTES, ledger: Ledger | None = None
    ) -> None:
        self.limit_changes, self.limit_bytes = changes, size
        self.ledger = ledger or Ledger(size)
        self.changes: deque[Change] = deque()
        self.size = 0
        self.dropped = 0
        self._noted = 0
        weakref.finalize(self, self.ledger.forget)

    def unnoted_drops(self) -> int:
        """Changes let go since the last time this was asked (to say so in the next reply)."""
        count, self._noted = self.dropped - self._noted, self.dropped
        return count

    def add(self, change: Change) -> bool:
        """Keep ``change``; False when it is larger than the journal can hold (it cannot be undone)."""
        if change.size > min(self.limit_bytes, self.ledger.limit):
            return False
        with self.ledger.lock:
            self.changes.append(change)
            self.size += change.size
            while len(self.changes) > self.limit_changes or self.size > self.limit_bytes:
                gone = self.changes.popleft()
                self.size -= gone.size
                self.dropped += 1
                self.ledger.release(gone)
            self.ledger.charge(self, change)
        return True

    def latest(self, keys: set[tuple[str, str]] | None = None) -> Change | None:
        """The newest change (touching one of ``keys``, when given)."""
        with self.ledger.lock:
            for change in reversed(self.changes):
                if keys is None or any(change.touches(key) for key in keys):
                    return change
        return None

    def remove(self, change: Change) -> None:
        with self.ledger.lock:
            if change in self.changes:
                self.changes.remove(change)
                self.size -= change.size
                self.ledger.release(change)


def session_journal(vfs: JailedFS, limit: int, budget: int = DEFAULT_SERVER_UNDO_BYTES) -> Journal:
    """The calling session's journal of at most ``limit`` changes (outside sessions, the one
    the server keeps in ``vfs.caches``), inside the server's undo budget of ``budget`` bytes."""
    from vfs_mcp.sessions import state_of

    caches = vfs.caches
    ledger: Ledger | None = caches.get("undo-ledger")
    if ledger is None:
        jail = weakref.ref(vfs.jail)

        def served() -> list[str]:
            mounts = getattr(jail(), "mounts", ())
            return [mount.real_root for mount in mounts if mount.is_local and mount.real_root]

        ledger = caches["undo-ledger"] = Ledger(budget, keeper=spool.Spool(served))

    def server_wide() -> Journal:
        kept: Journal | None = caches.get("undo")
        if kept is None:
            kept = caches["undo"] = Journal(limit, ledger=ledger)
        return kept

    return state_of("undo-journal", lambda: Journal(limit, ledger=ledger), server_wide)
