"""Which changes each session's ``undo()`` with no id reaches: the changes a call made (its
``Recording``, filled by the write path through the call's context) become its session's
``SessionJournal`` (newest last, bounded by ``limit`` changes and ``DEFAULT_UNDO_BYTES``: a
record past them stays on the timeline, undone by its id) and ``Sessions``, what an instance
counts of the records it made while they are in the log (to tell their sessions when they go).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass

from vfs_mcp.changes.steps import Step, written
from vfs_mcp.config import DEFAULT_UNDO_BYTES
from vfs_mcp.jail.context import Recording
from vfs_mcp.sessions import Slot

DEFAULT_UNDO_CHANGES = 100
SESSIONLESS_CHANGES = 10_000
"""Changes made in requests without a session the log keeps (within its bytes) before dropping the oldest."""

Key = tuple[str, str]


@dataclass(eq=False)
class Kept:
    """A record of the log, as this instance knows it."""

    id: str
    size: int
    tool: str = ""
    keys: frozenset[Key] = frozenset()
    journal: weakref.ref[SessionJournal] | None = None
    undoes: bool = False
    """An undo (taken back by its id, never by a session's ``undo()`` with none)."""


class SessionJournal:
    """The changes one session made, newest last (their records are in the log)."""

    def __init__(self, changes: int = DEFAULT_UNDO_CHANGES, size: int = DEFAULT_UNDO_BYTES) -> None:
        self.limit_changes, self.limit_bytes = changes, size
        self.changes: deque[Kept] = deque()
        self.size = 0
        self.dropped = 0
        self._noted = 0
        self.unkept: str | None = None
        """The newest change made that could not be kept for undo (its tool, and why), while
        no later one was: what ``undo()`` says instead of "nothing to undo"."""

    def unnoted_drops(self) -> int:
        """Changes let go since the last time this was asked (to say so in the next reply)."""
        count, self._noted = self.dropped - self._noted, self.dropped
        return count

    def latest(self, keys: set[Key] | None = None) -> Kept | None:
        """The newest change (touching one of ``keys``, when given)."""
        for kept in reversed(self.changes):
            if keys is None or kept.keys & keys:
                return kept
        return None

    def forget(self, kept: Kept, dropped: bool = False) -> None:
        if kept in self.changes:
            self.changes.remove(kept)
            self.size -= kept.size
            self.dropped += dropped


def touched(steps: list[Step]) -> frozenset[Key]:
    return frozenset((t.mount.url, t.rel) for op in steps for t in written(op))


class Sessions:
    """The records this instance made, while the log holds them, and the sessions that made
    them (``SessionJournal``)."""

    def __init__(self, budget: int, retained: int) -> None:
        self.lock = threading.RLock()
        self.retained = retained
        """Records counted at most (the timeline's retention lets older ones go)."""
        self._kept: OrderedDict[str, Kept] = OrderedDict()
        """Records this instance made, by id, oldest first (to tell their sessions when they go)."""
        self.sessionless = SessionJournal(SESSIONLESS_CHANGES, budget)
        """The changes of requests without a session (each found again by its id)."""
        self.own: SessionJournal | None = None
        """The changes of calls outside any session (a server of one client, in-process use)."""

    def note(self, kept: Kept) -> None:
        """A change was recorded: counted here while its record is in the log."""
        with self.lock:
            self._kept[kept.id] = kept
            while len(self._kept) > self.retained:
                self.forget(next(iter(self._kept)), dropped=True)  # gone from the timeline by now

    def keep(self, recording: Recording, journal: SessionJournal | None) -> None:
        """The call's changes are its session's (``journal``; None: a request without one)."""
        journal = journal or self.sessionless
        with self.lock:
            if recording.changes or recording.why_not:
                journal.unkept = None if recording.changes else f"{recording.tool}: {recording.why_not}"
            for change_id in recording.changes:
                kept = self._kept.get(change_id)
                if kept is None or kept.undoes:
                    continue  # dropped already by the log's bounds; an undo is taken back by its id
                kept.journal = weakref.ref(journal)
                journal.changes.append(kept)
                journal.size += kept.size
            while journal.changes and (
                len(journal.changes) > journal.limit_changes or journal.size > journal.limit_bytes
            ):
                # A session's bounds only bound undo() without an id: the record stays on the
                # timeline (its id still takes it back) until the timeline's retention lets it go.
                oldest = journal.changes[0]
                journal.forget(oldest, dropped=True)
                oldest.journal = None

    def let_go(self, change_id: str) -> None:
        """The timeline's retention deleted the record of ``change_id``: its session hears of it."""
        self.forget(change_id, dropped=True)

    def forget(self, change_id: str, dropped: bool = False) -> Kept | None:
        """The record ``change_id`` left the log (undone; ``dropped`` by the bounds): no longer counted."""
        with self.lock:
            kept = self._kept.pop(change_id, None)
            if kept is not None:
                journal = kept.journal() if kept.journal is not None else None
                if journal is not None:
                    journal.forget(kept, dropped)
        return kept


JOURNAL: Slot[SessionJournal] = Slot("the changes undo() with no id takes back")
"""Where a session keeps its journal (``session_journal``)."""


def session_journal(sessions: Sessions, limit: int = DEFAULT_UNDO_CHANGES) -> SessionJournal | None:
    """The calling session's journal (made on first use); None in a request without a session."""
    from vfs_mcp.sessions import current as session

    state = session.get()
    if state is None:
        with sessions.lock:
            if sessions.own is None:
                sessions.own = SessionJournal(limit)
        return sessions.own
    if state.sessionless:
        return None
    return state.kept.made(JOURNAL, lambda: SessionJournal(limit))
