"""The change log: every change a record in the state store, under an id the call returns, so
that any connection, process or replica sharing the store can take it back (``undo``), and a
change a dead process left half made is taken back before anyone writes there again.

Writing. A change of one atomic step is recorded once it is made (nothing can be half made) or,
on a local store, while it is made (``beside``: pending, not durable, filed once it is made);
a change of several steps is recorded, durably, before its first step (pending) and filed in
the log once its last is made. Its line on the timeline is written first, then its record is
filed: a change that can be undone always has its line (a crash between leaves the record
pending, and recovery files it with its line). The names are the state package's
(``state/layout.py``); which session's ``undo()`` reaches a change is ``kept.py``'s.

Bounds. The timeline (``state/timeline.py``) keeps the records of every instance alike: at
most ``budget`` bytes of before-images (``--undo-bytes``), ``timeline.KEEP_CHANGES`` changes
and ``timeline.KEEP_DAYS`` days; past them the oldest records are deleted, once the call that
went past them has answered (on the timeline's housekeeping thread), and the session that made
one hears of it in its next reply.

Order. "Later" for a restore point (``restore_points.py``) is the timeline's order; a change's
time on its instance's clock (``records.Summary.order``) orders what dead instances left.

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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vfs_mcp.changes.kept import Kept, Sessions, touched
from vfs_mcp.changes.state import StateStore, housekeeping, layout, open_state, records
from vfs_mcp.changes.state.records import Corrupt, Record, Summary
from vfs_mcp.changes.state.timeline import ID as ID
from vfs_mcp.changes.state.timeline import Retention, Timeline, TimelineEntry
from vfs_mcp.changes.steps import Absent, Remove, Rename, Restore, Step, image_size
from vfs_mcp.config import DEFAULT_SERVER_UNDO_BYTES
from vfs_mcp.errors import Conflict, InvalidArgument, NotFound, echoed
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.sessions import Slot
from vfs_mcp_backends.scopes import Later, later

log = logging.getLogger("vfs_mcp")

INSTANCE = re.compile(r"[0-9a-f]{16}")
"""How an instance's id is spelt (``state.new_instance_id``)."""
CLOCK_SKEW = 300.0
"""Seconds the state store's time of a record may lie before its change's time (the clocks
of replicas): timeline entries older than that are not looked at for a change's own."""
HEAD_READ = 4096
"""Bytes read to find a record's header when only its summary is wanted."""

UNRECORDED = "it could not be recorded"
"""Why a change made cannot be undone, when nothing says more."""
DONE = "done"
"""What an undo's mark says once its steps are all made."""


def new_id() -> str:
    """An unguessable change id (128 random bits), never beginning with "-", which a command
    line reads as an option (``vfs-mcp undo ID``: one id in 64 did)."""
    while (made := secrets.token_urlsafe(16)).startswith("-"):
        continue
    return made


def check_id(change_id: str) -> str:
    if not ID.fullmatch(change_id):
        raise InvalidArgument(
            f"{echoed(change_id)} is not a change id; give the id a change's reply named (22 characters)"
        )
    return change_id


def outcome(steps: list[Step]) -> tuple[list[str], list[str]]:
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
        retention = retention or Retention(budget)
        self.sessions = Sessions(budget, retention.changes)
        """The records this instance made, and the sessions whose ``undo()`` reaches them."""
        self.timeline = Timeline(store, retention, self.sessions.let_go, deferred=True)
        """Every change recorded, in order, with checkpoint names (``history``), bounded by
        ``retention`` once the call that recorded a change has answered."""
        self.lock = threading.Lock()
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
        steps: list[Step],
        finish: list[Step],
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
        self, change_id: str, tool: str, steps: Callable[[], list[Step]], created: float
    ) -> Later[list[Step]] | None:
        """Write the record of a change of one atomic step while the step is made (its steps
        are had by calling ``steps``), on a thread of its own from the step's first wait for its
        store (``scopes.later``): pending, not durable, to be filed by ``made`` once the step is
        made, or let go by ``abandoned``. A crash in between leaves it pending: recovery files
        it where the step was made, lets it go where it was not (a crash cannot cut the step in
        two). Only where a record is filed in one local rename (None elsewhere: ``atomic``
        records it once made). The job gives the steps (a record over the log's budget is not
        written: ``made`` says why)."""
        if self.store.host_folder is None:
            return None

        def write() -> list[Step]:
            back = steps()
            if self._too_large(back) is None:
                record = Record(change_id, self.store.instance, tool, created, back)
                self.store.write(self._pending(change_id), records.encode(record))
            return back

        return later(_RECORDER, write)

    def made(self, change_id: str, steps: list[Step] | None, why_not: str | None, tool: str = "") -> str | None:
        """A pending change's last step is made: into the log (or gone, when it cannot be
        undone); why it cannot be (None: recorded)."""
        why_not = why_not or self._too_large(steps)
        if steps is None or why_not is not None:
            self.store.delete(self._pending(change_id))
            return why_not or UNRECORDED
        kept = Kept(change_id, _size(steps), tool, keys=touched(steps))
        self._enter(kept, steps)  # its line first: a crash before the record is filed leaves it pending
        self.store.move(self._pending(change_id), layout.record(change_id))
        self.sessions.note(kept)
        return None

    def abandoned(self, change_id: str) -> None:
        """A pending change failed and was taken back whole: it never happened."""
        self.store.delete(self._pending(change_id))

    def atomic(
        self,
        tool: str,
        steps: list[Step] | None,
        why_not: str | None,
        created: float | None = None,
        change_id: str | None = None,
        undoes: Sequence[Record] = (),
    ) -> str | None:
        """Record a change of one step (or an undo: ``undoes`` the records it took back), once
        made (``created``: when it began to commit; now by default; ``change_id``: the id its
        writes were labelled with, when it has one); why it cannot be undone (None: recorded)."""
        why_not = why_not or self._too_large(steps)
        if steps is None or why_not is not None:
            return why_not or UNRECORDED
        change_id = change_id or new_id()
        when = self.clock() if created is None else created
        taken = [record.id for record in undoes]
        record = Record(change_id, self.store.instance, tool, when, steps, undoes=taken)
        kept = Kept(change_id, _size(steps), tool, keys=touched(steps), undoes=bool(undoes))
        # Its line first: a crash before its record is written leaves a change made (it is) that
        # cannot be undone, never one undoable that history does not show.
        # What the records it takes back counted on the timeline: their images' bytes, kept in them or
        # by a second name (``Record.size`` counts only the bytes a record holds itself).
        self._enter(kept, steps, taken, sum(_size(record.steps) for record in undoes))
        self.store.write(layout.record(change_id), records.encode(record))
        self.sessions.note(kept)
        return None

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
        entry = self.timeline.append(TimelineEntry(change_id, tool, time.time(), mounts=list(mounts), checkpoint=name))
        self.store.write(layout.record(change_id), records.encode(record))
        self.timeline.name(name, change_id)  # again: a replica that named it meanwhile is older
        return entry

    def entered(self, record: Record) -> None:
        """A change a dead instance made whole is about to be filed: its line on the timeline,
        unless the dead instance wrote it before it died (its line is written before its record
        is filed)."""
        if self.timeline.lists(record.id, since=record.created - CLOCK_SKEW):
            return
        keys = touched([*record.steps, *record.finish])
        entry = TimelineEntry.of(record.id, record.tool, record.steps, keys, _size(record.steps), record.undoes, 0)
        self.timeline.append(entry)

    def holds(self, change_id: str) -> bool:
        """Whether the log holds the record of ``change_id``."""
        try:
            self.store.read(layout.record(change_id), 0, 0)
        except FileNotFoundError:
            return False
        return True

    def _too_large(self, steps: list[Step] | None) -> str | None:
        if steps is not None and _size(steps) > self.budget:
            return "it is larger than the undo log holds (--undo-bytes)"
        return None

    def discard(self, change_id: str) -> None:
        """Delete a record that can never be undone (its images cannot be read back)."""
        self.sessions.forget(change_id)
        self.store.delete(layout.record(change_id))

    def discarded(self, change_id: str, mount_url: str) -> None:
        """A review discarded what ``change_id`` left pending on the mount ``mount_url``: a change
        that wrote only there never happened, its record and its timeline entry go (with the
        undo that took it back, if one did: ``Timeline.discarded``)."""
        name = layout.record(change_id)
        try:
            only_here = set(self.summary(name).mounts) <= {mount_url}
        except FileNotFoundError:
            only_here = True  # undone: the timeline knows by what
        except Corrupt:
            return
        if only_here:
            self.sessions.forget(change_id)
            self.store.delete(name)
            self.timeline.discarded(change_id)

    def settle(self) -> None:
        """Wait until what the changes recorded so far left for after their calls is done (retention)."""
        housekeeping.settle()

    def close(self) -> None:
        self.settle()
        self.store.close()

    def _pending(self, change_id: str) -> str:
        return layout.pending(change_id, self.store.instance)

    def _enter(self, kept: Kept, steps: Sequence[Step], undoes: Sequence[str] = (), freed: int = 0) -> None:
        """The line of the change ``kept`` on the timeline, written before its record is filed."""
        entry = TimelineEntry.of(kept.id, kept.tool, steps, kept.keys, kept.size, list(undoes), freed)
        try:
            self.timeline.append(entry)
        except OSError as err:  # the change stays undoable by its id, without a line in the history
            log.warning("the timeline of %s could not be written: %s", self.store.url, err)

    # -- reading and taking back ---------------------------------------------------------------

    def load(self, change_id: str, mount_of: Callable[[str], Mount]) -> Record:
        """The record of ``change_id``; NOT_FOUND when the log does not hold it, CONFLICT while
        it is being made or undone."""
        name = layout.record(check_id(change_id))
        try:
            return self.read(name, mount_of)
        except FileNotFoundError:
            pass
        if any(layout.of_change(item.name, change_id) for item in self.store.listing(layout.PENDING)):
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
            self.store.delete(layout.record(change_id))
            self.store.delete(self._undo_mark(change_id))
            self.sessions.forget(change_id)

    def undone(self, change_id: str, done: bool = True) -> None:
        """Every step of the undo of ``change_id`` is made (``done``; else: about to be taken
        back), durably before the next step."""
        mark = f"{self.store.instance} {DONE}" if done else self.store.instance
        self.store.write(self._undo_mark(change_id), mark.encode(), durable=True, create=False)

    @staticmethod
    def _undo_mark(change_id: str) -> str:
        return layout.undo_mark(change_id)

    # -- what dead instances left ---------------------------------------------------------------


LOG: Slot[ChangeLog] = Slot("the change log")
"""Where a ``JailedFS`` keeps its change log (``changes.log_of``)."""


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


def _size(steps: list[Step]) -> int:
    return sum(image_size(op.image) for op in steps if isinstance(op, Restore))
