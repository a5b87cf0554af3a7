"""The change log: every change a record in the state store, under an id the call returns, so
that any connection, process or replica sharing the store can take it back (``undo``), and a
change a dead process left half made is taken back before anyone writes there again.

Writing. A change of one atomic step is recorded once it is made (nothing can be half made) or,
on a local store, while it is made (``beside``: pending, not durable, filed once it is made);
a change of several steps is recorded, durably, before its first step (``pending/``) and moved
into the log once its last is made (``changes/``). A call's changes are noted in its
``Recording``; the call's session keeps their ids (its ``SessionJournal``), so ``undo()`` with
no id finds the session's newest.

Bounds. The timeline (``timeline.py``) keeps the records of every instance alike: at most
``budget`` bytes of before-images (``--undo-bytes``), ``timeline.KEEP_CHANGES`` changes and
``timeline.KEEP_DAYS`` days; past them the oldest records are deleted, and the session that made
one hears of it in its next reply. Each session's ``limit`` changes and ``DEFAULT_UNDO_BYTES``
only bound what its ``undo()`` with no id reaches: a record past them stays, undone by its id.

Order. A change's place in the log is the time it began to commit on its instance's clock, then
the instance, then the id (``records.Summary.order``): "later" for a restore point
(``restore_point``: a change and every later change of the mounts it touched, undone as one).

Recovery (``recover``). A pending record whose instance is dead is a change cut short: its
steps are run back, each only where its path still holds what the change left (``recovery``);
an undo under way whose instance is dead is finished the same way (a restore point's records
newest first, each one whose steps were all made — its mark says ``done`` — only let go). It
runs when a server starts, and with every lease renewal on a shared store (a replica that died).
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vfs_mcp.changes import records
from vfs_mcp.changes.ops import Absent, Op, Remove, Rename, Restore, image_size, written
from vfs_mcp.changes.records import Corrupt, Record, Summary
from vfs_mcp.changes.state import StateStore, open_state
from vfs_mcp.changes.timeline import ID as ID
from vfs_mcp.changes.timeline import Retention, Timeline, TimelineEntry
from vfs_mcp.config import DEFAULT_SERVER_UNDO_BYTES, DEFAULT_UNDO_BYTES
from vfs_mcp.errors import Conflict, Internal, InvalidArgument, NotFound, TooLarge, echoed
from vfs_mcp.jail.mounts import Mount

if TYPE_CHECKING:
    pass

log = logging.getLogger("vfs_mcp")

CACHE_KEY = "changes.log"
"""Where a ``JailedFS`` keeps its change log (``changes.log_of``)."""
OPENER = "changes.open"
"""Where a ``JailedFS`` keeps how to open its change log, when its server says (``--state``)."""
DEFAULT_UNDO_CHANGES = 100
SESSIONLESS_CHANGES = 10_000
"""Changes made in requests without a session the log keeps (within its bytes) before dropping the oldest."""
INSTANCE = re.compile(r"[0-9a-f]{16}")
"""How an instance's id is spelt (``state.new_instance_id``)."""
RESTORE_CHANGES = 1_000
"""Changes one undo takes back at most (``restore_point``): a restore point further back is
refused, saying how many changes it would take back."""
RESTORE_LISTED = 10 * RESTORE_CHANGES
"""Records of any mount made since a restore point that one undo looks through at most."""
CLOCK_SKEW = 300.0
"""Seconds the state store's time of a record may lie before its change's time (the clocks
of replicas and of an object store): records listed as older than that are not looked at."""
HEAD_READ = 4096
"""Bytes read to find a record's header when only its summary is wanted."""

Key = tuple[str, str]
DONE = "done"
"""What an undo's mark says once its steps are all made."""


def new_id() -> str:
    """An unguessable change id (128 random bits)."""
    return secrets.token_urlsafe(16)


def check_id(change_id: str) -> str:
    if not ID.fullmatch(change_id):
        raise InvalidArgument(
            f"{echoed(change_id)} is not a change id; give the id a change's reply named (22 characters)"
        )
    return change_id


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


@dataclass
class Recording:
    """The changes one call made, oldest first; ``why_not``: why one cannot be undone."""

    tool: str
    limit: int = DEFAULT_UNDO_BYTES
    changes: list[Kept] = field(default_factory=list)
    why_not: str | None = None


_recording: ContextVar[Recording | None] = ContextVar("vfs_mcp_recording", default=None)


@contextmanager
def recording(tool: str, limit: int = DEFAULT_UNDO_BYTES) -> Iterator[Recording]:
    """Collect the changes the calls inside make (and their threads)."""
    record = Recording(tool, limit)
    token = _recording.set(record)
    try:
        yield record
    finally:
        _recording.reset(token)


def current() -> Recording | None:
    return _recording.get()


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


def touched(steps: list[Op]) -> frozenset[Key]:
    return frozenset((t.mount.url, t.rel) for op in steps for t in written(op))


def outcome(steps: list[Op]) -> tuple[list[str], list[str]]:
    """The paths an undo of ``steps`` (run in order) puts back as they were, and those it
    deletes again (the change created them): each path as the last step to touch it leaves it."""
    last: dict[str, bool] = {}
    for op in steps:
        if isinstance(op, Rename):
            last.pop(op.source.display, None)
            last[op.source.display] = False
            last.pop(op.dest.display, None)
            last[op.dest.display] = True
        elif isinstance(op, (Restore, Remove)):
            shown = op.target.display
            last.pop(shown, None)
            last[shown] = isinstance(op, Restore) and not isinstance(op.image, Absent)
    return [p for p, back in last.items() if back], [p for p, back in last.items() if not back]


class ChangeLog:
    """One state store's change log, as this instance writes, bounds and recovers it."""

    def __init__(
        self, store: StateStore, budget: int = DEFAULT_SERVER_UNDO_BYTES, retention: Retention | None = None
    ) -> None:
        self.store = store
        self.budget = budget
        self.timeline = Timeline(store, retention or Retention(budget), self._let_go)
        """Every change recorded, in order, with checkpoint names (``history``), bounded by ``retention``."""
        self.lock = threading.RLock()
        self._kept: OrderedDict[str, Kept] = OrderedDict()
        """Records this instance made, by id, oldest first (to tell their sessions when they go)."""
        self.sessionless = SessionJournal(SESSIONLESS_CHANGES, budget)
        """The changes of requests without a session (each found again by its id)."""
        self.own: SessionJournal | None = None
        """The changes of calls outside any session (a server of one client, in-process use)."""
        self._last = 0.0

    def clock(self) -> float:
        """Now, on this instance's clock, never the same time twice (a change's place in the log)."""
        with self.lock:
            self._last = max(time.time(), self._last + 1e-6)
            return self._last

    # -- writing a change's record ------------------------------------------------------------

    def pending(
        self,
        change_id: str,
        tool: str,
        steps: list[Op],
        finish: list[Op],
        created: float | None = None,
        drops: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """Record a change of several steps, durably, before its first step is made (``created``:
        when it began to commit, from ``clock``; now by default; ``drops``: ``Record.drops``)."""
        when = self.clock() if created is None else created
        record = Record(change_id, self.store.instance, tool, when, steps, atomic=False, finish=finish)
        record.drops = drops or {}
        self.store.write(self._pending(change_id), records.encode(record), durable=True)

    def beside(
        self, change_id: str, tool: str, steps: Callable[[], list[Op]], created: float
    ) -> Future[list[Op]] | None:
        """Write the record of a change of one atomic step while the step is made (its steps
        are had by calling ``steps``), on a thread of its own: pending, not durable, to be
        filed by ``made`` once the step is made, or let go by ``abandoned``. A crash in
        between leaves it pending: recovery files it where the step was made, lets it go where
        it was not (a crash cannot cut the step in two). Only where a record is filed in one
        local rename (None elsewhere: ``atomic`` records it once made). The future gives the
        steps (a record over the log's budget is not written: ``made`` says why)."""
        if self.store.host_folder is None:
            return None

        def write() -> list[Op]:
            back = steps()
            if self._too_large(back) is None:
                record = Record(change_id, self.store.instance, tool, created, back)
                self.store.write(self._pending(change_id), records.encode(record))
            return back

        return _RECORDER.submit(write)

    def made(self, change_id: str, steps: list[Op] | None, why_not: str | None, tool: str = "") -> None:
        """A pending change's last step is made: into the log (or gone, when it cannot be undone)."""
        why_not = why_not or self._too_large(steps)
        if steps is None or why_not is not None:
            self.store.delete(self._pending(change_id))
            self._note(None, why_not)
            return
        self.store.move(self._pending(change_id), f"changes/{change_id}.rec")
        self._note(Kept(change_id, _size(steps), tool, keys=touched(steps)), None, steps)

    def abandoned(self, change_id: str) -> None:
        """A pending change failed and was taken back whole: it never happened."""
        self.store.delete(self._pending(change_id))

    def atomic(
        self,
        tool: str,
        steps: list[Op] | None,
        why_not: str | None,
        created: float | None = None,
        change_id: str | None = None,
        undoes: Sequence[Record] = (),
    ) -> None:
        """Record a change of one step (or an undo: ``undoes`` the records it took back), once
        made (``created``: when it began to commit; now by default; ``change_id``: the id its
        writes were labelled with, when it has one)."""
        why_not = why_not or self._too_large(steps)
        if steps is None or why_not is not None:
            self._note(None, why_not)
            return
        change_id = change_id or new_id()
        when = self.clock() if created is None else created
        taken = [record.id for record in undoes]
        record = Record(change_id, self.store.instance, tool, when, steps, undoes=taken)
        self.store.write(f"changes/{change_id}.rec", records.encode(record))
        kept = Kept(change_id, _size(steps), tool, keys=touched(steps), undoes=bool(undoes))
        self._note(kept, None, steps, taken, sum(record.size for record in undoes))

    def checkpoint(self, name: str, mounts: Sequence[str], tool: str = "checkpoint") -> TimelineEntry:
        """Record the checkpoint ``name`` of ``mounts``: a change with no steps, a point an undo
        "and after" of it brings those mounts back to; the name now means it. Given again with
        nothing changed since, it is the same point: that checkpoint's entry, nothing written."""
        named = self.timeline.named(name)
        newest = next(self.timeline.newest_first(scan=1), None) if named is not None else None
        if newest is not None and newest.id == named and newest.checkpoint == name and newest.mounts == list(mounts):
            return newest
        change_id = new_id()
        record = Record(change_id, self.store.instance, tool, self.clock(), [], checkpoint=name, mounts=list(mounts))
        self.timeline.name(name, change_id)  # checks the name before anything is written
        self.store.write(f"changes/{change_id}.rec", records.encode(record))
        entry = self.timeline.append(TimelineEntry(change_id, tool, time.time(), mounts=list(mounts), checkpoint=name))
        self.timeline.name(name, change_id)  # again: a replica that named it meanwhile is older
        return entry

    def entered(self, record: Record) -> None:
        """A change a dead instance made whole is in the log now: its line on the timeline."""
        keys = touched([*record.steps, *record.finish])
        entry = TimelineEntry.of(record.id, record.tool, record.steps, keys, record.size, record.undoes, 0)
        with contextlib.suppress(OSError):
            self.timeline.append(entry)

    def holds(self, change_id: str) -> bool:
        """Whether the log holds the record of ``change_id``."""
        try:
            self.store.read(f"changes/{change_id}.rec", 0, 0)
        except FileNotFoundError:
            return False
        return True

    def _too_large(self, steps: list[Op] | None) -> str | None:
        if steps is not None and _size(steps) > self.budget:
            return "it is larger than the undo log holds (--undo-bytes)"
        return None

    def unrecorded(self, why_not: str) -> None:
        """A change was made but its record could not be written: it cannot be undone."""
        self._note(None, why_not)

    def discard(self, change_id: str) -> None:
        """Delete a record that can never be undone (its images cannot be read back)."""
        self.forget(change_id)
        self.store.delete(f"changes/{change_id}.rec")

    def close(self) -> None:
        self.store.close()

    def _pending(self, change_id: str) -> str:
        return f"pending/{change_id}.{self.store.instance}.rec"

    def _note(
        self,
        kept: Kept | None,
        why_not: str | None,
        steps: Sequence[Op] = (),
        undoes: Sequence[str] = (),
        freed: int = 0,
    ) -> None:
        recording = current()
        if kept is not None:
            with self.lock:
                self._kept[kept.id] = kept
                while len(self._kept) > self.timeline.retention.changes:
                    self.forget(next(iter(self._kept)), dropped=True)  # gone from the timeline by now
            tool = recording.tool if recording is not None else kept.tool
            entry = TimelineEntry.of(kept.id, tool, steps, kept.keys, kept.size, list(undoes), freed)
            try:
                self.timeline.append(entry)
            except OSError as err:  # the change stays undoable by its id, without a line in the history
                log.warning("the timeline of %s could not be written: %s", self.store.url, err)
        if recording is None:
            return
        if kept is None:
            recording.why_not = recording.why_not or why_not or "it could not be recorded"
        else:
            kept.tool = recording.tool
            recording.changes.append(kept)

    # -- a session's changes and the bounds ------------------------------------------------------

    def keep(self, recording: Recording, journal: SessionJournal | None) -> None:
        """The call's changes are its session's (``journal``; None: a request without one)."""
        journal = journal or self.sessionless
        with self.lock:
            if recording.changes or recording.why_not:
                journal.unkept = None if recording.changes else f"{recording.tool}: {recording.why_not}"
            for kept in recording.changes:
                if kept.id not in self._kept or kept.undoes:
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

    def _let_go(self, change_id: str) -> None:
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

    # -- reading and taking back ---------------------------------------------------------------

    def load(self, change_id: str, mount_of: Callable[[str], Mount]) -> Record:
        """The record of ``change_id``; NOT_FOUND when the log does not hold it, CONFLICT while
        it is being made or undone."""
        name = f"changes/{check_id(change_id)}.rec"
        try:
            return self.read(name, mount_of)
        except FileNotFoundError:
            pass
        if any(item.name.startswith(change_id + ".") for item in self.store.listing("pending")):
            raise Conflict(f"change {change_id} is being made or undone right now; try again in a moment")
        by = self.timeline.undone_by(change_id)
        if by is not None:
            raise NotFound(f"change {change_id} was undone already, by change {by}: undo {by} to make it again")
        raise NotFound(
            f"change {change_id} is not in the undo log: it was undone already, or dropped by the log's limits"
        )

    def read(self, name: str, mount_of: Callable[[str], Mount]) -> Record:
        head = self.store.read(name, 0, records.FIRST_READ)
        end = records.header_size(head)
        if len(head) < end:
            head = self.store.read(name, 0, end)
        return records.decode(
            head, mount_of, lambda start, stop: self.store.read(name, start, stop), kept=self.store.read
        )

    def summary(self, name: str) -> Summary:
        """What the header of the record ``name`` says (its images left unread)."""
        head = self.store.read(name, 0, HEAD_READ)
        end = records.header_size(head)
        if len(head) < end:
            head = self.store.read(name, 0, end)
        return records.summary(head)

    def restore_point(self, change_id: str, mount_of: Callable[[str], Mount]) -> list[Record]:
        """The records an undo of ``change_id`` "and after" takes back, newest first: it, and
        every later change (``records.Summary.order``) of a mount it touched — and, from a
        change that touched one of those and another mount, of that mount too. Changes of other
        mounts stay. NOT_FOUND or CONFLICT as ``load`` says; CONFLICT while a later change of
        those mounts is being made; TOO_LARGE past ``RESTORE_CHANGES`` changes (or
        ``RESTORE_LISTED`` records of any mount made since)."""
        first = self.load(change_id, mount_of)
        start = (first.created, first.owner, first.id)
        since = [
            item.name
            for item in self.store.listing("changes")
            if item.name.endswith(".rec")
            and item.name != f"{change_id}.rec"
            and item.modified >= first.created - CLOCK_SKEW
        ]
        if len(since) > RESTORE_LISTED:
            raise TooLarge(
                f"{len(since)} changes were made since change {change_id}, more than one undo looks through "
                f"({RESTORE_LISTED}); undo to a later change"
            )
        later = sorted((s for s in self._summaries("changes", since) if s.order > start), key=lambda s: s.order)
        mounts = {url for url, _ in touched([*first.steps, *first.finish])} | set(first.mounts)
        chosen: list[Summary] = []
        for later_one in later:
            if mounts.intersection(later_one.mounts):
                chosen.append(later_one)
                mounts.update(later_one.mounts)
        if len(chosen) + 1 > RESTORE_CHANGES:
            raise TooLarge(
                f"undoing change {change_id} and every later one takes back {len(chosen) + 1} changes, more than "
                f"one undo takes back ({RESTORE_CHANGES}); undo to a later change first"
            )
        making = [item.name for item in self.store.listing("pending") if item.name.count(".") == 2]
        for under_way in self._summaries("pending", making):
            if under_way.order > start and mounts.intersection(under_way.mounts):
                raise Conflict(
                    f"change {under_way.id} of {', '.join(sorted(mounts.intersection(under_way.mounts)))} is being "
                    "made right now; try again in a moment"
                )
        return [self.load(s.id, mount_of) for s in reversed(chosen)] + [first]

    def _summaries(self, folder: str, names: list[str]) -> Iterator[Summary]:
        for name in names:
            try:
                yield self.summary(f"{folder}/{name}")
            except FileNotFoundError:
                continue  # undone or made meanwhile: not there to take back
            except Corrupt as err:
                raise Internal(
                    f"the undo log holds a record that cannot be read ({name}: {err}); nothing was undone"
                ) from None

    @contextlib.contextmanager
    def undoing(self, change_ids: Sequence[str], by: str | None = None) -> Iterator[None]:
        """Hold the marks that ``change_ids`` (newest first) are being undone (durable, and only
        one undoer of each at a time, across replicas); once the block ends without error, their
        records leave the log (the timeline says the change ``by`` took them back, when its
        record was kept). Within the block, ``undone`` notes each one whose steps are all made
        (recovery lets it go rather than running it again)."""
        marked: list[str] = []
        try:
            for change_id in change_ids:
                try:
                    self.store.write(self._undo_mark(change_id), self.store.instance.encode(), durable=True)
                except FileExistsError:
                    raise Conflict(
                        f"change {change_id} is being undone by another request; try again in a moment"
                    ) from None
                marked.append(change_id)
            yield
        except BaseException:
            self.store.delete(*(self._undo_mark(change_id) for change_id in marked))
            raise
        if by is not None and self.holds(by):
            with contextlib.suppress(OSError):
                self.timeline.undone(list(change_ids), by)
        for change_id in change_ids:
            self.store.delete(f"changes/{change_id}.rec")
            self.store.delete(self._undo_mark(change_id))
            self.forget(change_id)

    def undone(self, change_id: str, done: bool = True) -> None:
        """Every step of the undo of ``change_id`` is made (``done``; else: about to be taken
        back), durably before the next step."""
        mark = f"{self.store.instance} {DONE}" if done else self.store.instance
        self.store.write(self._undo_mark(change_id), mark.encode(), durable=True, create=False)

    @staticmethod
    def _undo_mark(change_id: str) -> str:
        return f"pending/{change_id}.undo"

    # -- what dead instances left ---------------------------------------------------------------

    def unfinished(self) -> list[tuple[str, str, str]]:
        """(kind, change id, owner) of what dead instances left under way: ``"change"`` cut short,
        ``"undo"`` not finished, ``"undone"`` an undo whose steps were all made."""
        found = []
        for item in self.store.listing("pending"):
            parts = item.name.split(".")
            if len(parts) == 3 and parts[2] == "rec":
                kind, owner = "change", parts[1]
            elif len(parts) == 2 and parts[1] == "undo":
                try:
                    owner, _, state = self.store.read(f"pending/{item.name}").decode(errors="replace").partition(" ")
                except FileNotFoundError:
                    continue
                kind = "undone" if state == DONE else "undo"
            else:
                continue
            # A name not spelt as ours is no instance to ask about: recovery quarantines it.
            if owner != self.store.instance and (not INSTANCE.fullmatch(owner) or not self.store.alive(owner)):
                found.append((kind, parts[0], owner))
        return found


_RECORDER = ThreadPoolExecutor(1, thread_name_prefix="vfs-mcp-record")
"""Writes the records of changes of one step beside the step (``ChangeLog.beside``): its thread
starts with the first, and imports nothing (the modules it runs are the write path's own)."""


def default_log(mounts: list[Mount], url: str | None = None, budget: int = DEFAULT_SERVER_UNDO_BYTES) -> ChangeLog:
    """The change log in the state store ``url`` (None: the default one for ``mounts``; in
    memory when every mount is)."""
    served = [mount.real_root for mount in mounts if mount.is_local and mount.real_root]
    store = open_state(
        url, served=served, urls=[mount.url for mount in mounts], memory=all(m.scheme == "memory" for m in mounts)
    )
    return ChangeLog(store, budget)


def _size(steps: list[Op]) -> int:
    return sum(image_size(op.image) for op in steps if isinstance(op, Restore))


def session_journal(changelog: ChangeLog, limit: int = DEFAULT_UNDO_CHANGES) -> SessionJournal | None:
    """The calling session's journal (made on first use); None in a request without a session."""
    from vfs_mcp.sessions import current as session

    state = session.get()
    if state is None:
        with changelog.lock:
            if changelog.own is None:
                changelog.own = SessionJournal(limit)
        return changelog.own
    if state.sessionless:
        return None
    kept = state.kept.get("undo-journal")
    if kept is None:
        kept = state.kept["undo-journal"] = SessionJournal(limit)
    return kept  # type: ignore[no-any-return]
