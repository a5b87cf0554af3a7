"""The timeline: every change the log recorded, in the order it was recorded, as small entries
of the state store numbered one after the other — what ``history`` pages through, where
checkpoint names live, and what retention trims, oldest first.

    timeline/e-<seq>        the entry of the <seq>th change recorded (JSON, ``TimelineEntry``): created
                            once, never rewritten (create-only: two replicas never take one number)
    timeline/head           a hint: a number at most a few below the newest entry's
    timeline/tail           a hint: the oldest entry still kept (retention deletes below it)
    timeline/u-<id>         change <id> was taken back: the id of the undo that did it
    timeline/n-<name>       the checkpoint <name>: the id of its newest change

No listing is ever needed: the newest entry is found from the head hint by reading forward,
a page by reading back from it; so a page of history and a change's entry cost the same
with 100,000 entries as with none. Each entry carries the bytes of every record kept from
the first entry to it (``total``), so the bytes the timeline keeps are two entries' totals
apart; retention (``Retention``) lets go of the oldest entries, with their records, while the
timeline holds more than its count, its bytes or its age. A log's timeline lets them go after
the call that appended past its bounds (``deferred``): on the housekeeping thread, which the
call does not wait for — deleting a change's record, its entry and the image of a file it
replaced (a 1 MB unlink for a 1 MB file) cost an edit more than its own record did. At most ``TRIM_LAG`` entries are appended before one is trimmed
in the appending call again, so the timeline is never more than that past its bounds.

An entry is appended before its change's record is filed in the log: a change that can be
undone always has its line. A crash between the two leaves the record pending (recovery files
it, and appends its line unless it finds it: ``lists``) or, for a record written once its change
is made, a line whose change cannot be undone (an undo says so).
"""

from __future__ import annotations

import functools
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from vfs_mcp.changes.frozen import frozen
from vfs_mcp.changes.state import StateStore, housekeeping, layout
from vfs_mcp.changes.steps import Step, written
from vfs_mcp.errors import InvalidArgument, NotFound, echoed

HINT_EVERY = 16
"""Entries appended between two writes of the head hint (a reader reads forward past it)."""
SCAN = 2_000
"""Entries one history page looks through at most (a filtered page past it gives a cursor)."""
PATHS_KEPT = 16
"""Paths an entry names (``count`` says how many the change wrote)."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ID = re.compile(r"[A-Za-z0-9_-]{22}")
"""A change id (``log.new_id``: 128 random bits)."""
KEEP_CHANGES = 100_000
"""Changes the timeline keeps by default (``Retention.changes``)."""
KEEP_DAYS = 30.0
"""Days the timeline keeps a change by default (``Retention.days``)."""
TRIM_LAG = 16
"""Entries a ``deferred`` timeline appends while its trim has not run before the appending
call trims itself (a housekeeping thread that cannot keep up does not let it grow past its bounds)."""


@frozen
class Retention:
    """What the timeline keeps: the newest ``changes``, within ``bytes`` of records, none older
    than ``days``; the oldest go first."""

    bytes: int
    changes: int = KEEP_CHANGES
    days: float = KEEP_DAYS

    def describe(self) -> str:
        return f"{self.changes} changes, {self.bytes} bytes, {self.days:g} days"


@dataclass
class TimelineEntry:
    """One change on the timeline, as its history line shows it."""

    id: str
    tool: str
    at: float
    """When it was recorded (this instance's clock)."""
    paths: list[str] = field(default_factory=list)
    """The paths it wrote, as the tools name them (the first ``PATHS_KEPT``)."""
    count: int = 0
    """How many paths it wrote."""
    mounts: list[str] = field(default_factory=list)
    size: int = 0
    """Bytes of before-images its record keeps."""
    undoes: list[str] = field(default_factory=list)
    """The changes it took back (an undo), newest first."""
    checkpoint: str | None = None
    freed: int = 0
    """Bytes of the records it took back (an undo: they leave the log)."""
    seq: int = 0
    total: int = 0
    """Bytes kept by every entry from the first to this one (retention by bytes)."""

    @staticmethod
    def of(
        change_id: str,
        tool: str,
        steps: Sequence[Step],
        keys: Iterable[tuple[str, str]],
        size: int,
        undoes: list[str],
        freed: int,
    ) -> TimelineEntry:
        """The entry of a change recorded now, from the steps that take it back."""
        paths = list(dict.fromkeys(target.display for op in steps for target in written(op)))
        return TimelineEntry(
            change_id,
            tool or "a change",
            time.time(),
            paths=paths[:PATHS_KEPT],
            count=len(paths),
            mounts=sorted({url for url, _ in keys}),
            size=size,
            undoes=undoes,
            freed=freed,
        )

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes) -> TimelineEntry:
        try:
            value: dict[str, Any] = json.loads(data)
            return TimelineEntry(
                id=str(value["id"]),
                tool=str(value["tool"]),
                at=float(value["at"]),
                paths=[str(p) for p in value.get("paths", [])],
                count=int(value.get("count", 0)),
                mounts=[str(m) for m in value.get("mounts", [])],
                size=int(value.get("size", 0)),
                undoes=[str(u) for u in value.get("undoes", [])],
                checkpoint=value.get("checkpoint"),
                freed=int(value.get("freed", 0)),
                seq=int(value["seq"]),
                total=int(value.get("total", 0)),
            )
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"a timeline entry this version cannot read ({err!r})") from None


def check_name(name: str) -> str:
    """``name`` as a checkpoint's name, or INVALID_ARGUMENT."""
    if not NAME.fullmatch(name):
        raise InvalidArgument(
            f"{echoed(name)} is not a checkpoint name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


class Timeline:
    """The timeline of one state store, as this instance appends to it, reads and trims it."""

    def __init__(
        self,
        store: StateStore,
        retention: Retention,
        let_go: Callable[[str], None] | None = None,
        *,
        deferred: bool = False,
    ) -> None:
        self.store = store
        self.retention = retention
        self._on_let_go = let_go
        """Told the id of each change retention lets go of."""
        self.deferred = deferred
        """Whether retention runs after the appending call, on the housekeeping thread."""
        self.lock = threading.Lock()
        self._last: TimelineEntry | None = None
        """The newest entry this instance appended (its total, without reading it back)."""
        self._tail: TimelineEntry | None = None
        """The oldest entry as this instance last saw it (retention's next candidate)."""
        self._trimming = threading.Lock()
        self._behind = 0
        """Entries appended since the last trim began (under ``lock``)."""
        self._queued: Future[None] | None = None
        """The trim queued on the housekeeping thread and not yet begun (under ``lock``)."""

    # -- names -------------------------------------------------------------------------------

    def _read_entry(self, seq: int) -> TimelineEntry | None:
        if seq < 1:
            return None
        try:
            return TimelineEntry.decode(self.store.read(layout.entry(seq)))
        except FileNotFoundError:
            return None
        except ValueError:
            return TimelineEntry(id="?", tool="(an entry this version cannot read)", at=0.0, seq=seq)

    def _hint(self, name: Literal["head", "tail"], default: int) -> int:
        try:
            return max(default, int(self.store.read(layout.hint(name)).decode() or default))
        except (FileNotFoundError, ValueError):
            return default

    # -- appending ---------------------------------------------------------------------------

    def append(self, entry: TimelineEntry, now: Callable[[], float] = time.time) -> TimelineEntry:
        """Put ``entry`` at the timeline's end (its ``seq`` and ``total`` filled in), then let
        go of what retention no longer keeps (``deferred``: on the housekeeping thread, once
        this returns)."""
        with self.lock:
            last = self._last
            # After this instance's own last entry (the newest looked for only when there is
            # none, or when another instance took that number: a request saved on every later
            # change). Looked for by reading forward from the hint (``head``), not by trying to
            # create each number past it: a first change after up to ``HINT_EVERY`` others.
            seq = (last.seq if last is not None else self.head()) + 1
            before = last
            while True:
                if before is None:
                    before = self._read_entry(seq - 1)
                entry.seq = seq
                entry.total = (before.total if before is not None else 0) + entry.size - entry.freed
                try:
                    self.store.write(layout.entry(seq), entry.encode())
                    break
                except FileExistsError:
                    seq, before = max(seq, self.head()) + 1, None
            self._last = entry
            if seq % HINT_EVERY == 0 or seq == 1:
                self.store.write(layout.hint("head"), str(seq).encode(), create=False)
            tail = self._tail
            if tail is not None and tail.seq < seq and self._keeps(tail, entry, now()):
                return entry  # retention keeps all from the tail it last left: nothing to let go, nothing queued
            self._behind += 1
            inline = not self.deferred or self._behind > TRIM_LAG
            if not inline and self._queued is None:
                trim = functools.partial(self.trim, now)
                self._queued = housekeeping.later(trim, f"trimming the timeline of {self.store.url}")
                inline = self._queued is None  # the interpreter is ending: no thread takes work now
        if inline:
            self.trim(now)
        return entry

    def trim(self, now: Callable[[], float] = time.time) -> None:
        """Let go of what retention no longer keeps, the oldest first, up to the newest entry
        this instance appended."""
        with self._trimming:
            with self.lock:
                newest, self._behind, self._queued = self._last, 0, None
            if newest is not None:
                self._trim(newest, now())

    def _trim(self, newest: TimelineEntry, now: float) -> None:
        tail = self._tail
        if tail is None or tail.seq > newest.seq:
            tail = self._first(self._hint("tail", 1), newest.seq)
        moved = False
        while tail is not None and tail.seq < newest.seq:
            if self._keeps(tail, newest, now):
                break
            self.let_go(tail)
            moved = True
            tail = self._first(tail.seq + 1, newest.seq)
        self._tail = tail
        if moved and tail is not None:
            self.store.write(layout.hint("tail"), str(tail.seq).encode(), create=False)

    def _keeps(self, tail: TimelineEntry, newest: TimelineEntry, now: float) -> bool:
        """Whether retention keeps every change from ``tail`` to ``newest`` (the tail this
        instance last left: a trim stops there, and an append that finds it kept queues none)."""
        keep = self.retention
        return (
            newest.seq - tail.seq + 1 <= keep.changes
            and newest.total - tail.total + tail.size - tail.freed <= keep.bytes
            and tail.at >= now - keep.days * 86_400
        )

    def _first(self, seq: int, newest: int) -> TimelineEntry | None:
        """The oldest entry from ``seq`` on (entries between may be gone: trimmed by another)."""
        while seq <= newest:
            found = self._read_entry(seq)
            if found is not None:
                return found
            seq += 1
        return None

    def let_go(self, entry: TimelineEntry) -> None:
        """Delete ``entry`` with its change's record and marks (retention)."""
        gone = [layout.record(entry.id), layout.undone_by(entry.id)] if entry.id != "?" else []
        if entry.checkpoint is not None and self.named(entry.checkpoint) == entry.id:
            gone.append(layout.checkpoint(entry.checkpoint))
        self.store.delete(*gone, layout.entry(entry.seq))
        if self._on_let_go is not None:
            self._on_let_go(entry.id)

    def discarded(self, change_id: str, scan: int = SCAN) -> None:
        """The change ``change_id`` never happened (a review discarded what it left pending):
        its entry goes, and the undo that took it back, if one did, with its record — it holds
        the discarded bytes (entries looked for among the newest ``scan``; older ones go with
        retention)."""
        gone = [change_id]
        while (by := self.undone_by(gone[-1])) is not None and by not in gone:
            gone.append(by)
        self.store.delete(*(layout.undone_by(one) for one in gone), *(layout.record(one) for one in gone[1:]))
        left = set(gone)
        for entry in self.newest_first(scan=scan):
            if entry.id in left:
                self.store.delete(layout.entry(entry.seq))
                left.discard(entry.id)
                if not left:
                    return

    # -- marks -------------------------------------------------------------------------------

    def undone(self, change_ids: list[str], by: str) -> None:
        """``change_ids`` were taken back by the change ``by``."""
        for change_id in change_ids:
            self.store.write(layout.undone_by(change_id), by.encode(), create=False)

    def undone_by(self, change_id: str) -> str | None:
        try:
            return self.store.read(layout.undone_by(change_id)).decode() or None
        except FileNotFoundError:
            return None

    def name(self, name: str, change_id: str) -> None:
        """The checkpoint ``name`` is now the change ``change_id`` (a name given again moves)."""
        self.store.write(layout.checkpoint(check_name(name)), change_id.encode(), create=False)

    def resolve(self, reference: str) -> str:
        """The change id ``reference`` names: itself, or the id of the checkpoint of that name."""
        if ID.fullmatch(reference):
            return reference
        named = self.named(reference)
        if named is None:
            raise NotFound(f"{echoed(reference)} is neither a change id nor a checkpoint's name; history lists both")
        return named

    def named(self, name: str) -> str | None:
        """The id of the checkpoint ``name``; None when there is none."""
        if not NAME.fullmatch(name):
            return None
        try:
            return self.store.read(layout.checkpoint(name)).decode() or None
        except FileNotFoundError:
            return None

    # -- reading -----------------------------------------------------------------------------

    def head(self) -> int:
        """The number of the newest entry (0: none yet)."""
        seq = max(self._hint("head", 0), self._last.seq if self._last is not None else 0)
        while self._exists(seq + 1):
            seq += 1
        return seq

    def extent(self) -> tuple[int, int]:
        """(changes, bytes) the timeline keeps now (two entries read, however many there are)."""
        head = self.head()
        newest, oldest = self._read_entry(head), self._first(self.tail(), head)
        if newest is None or oldest is None:
            return 0, 0
        return head - oldest.seq + 1, newest.total - oldest.total + oldest.size - oldest.freed

    def tail(self) -> int:
        """The number below which every entry was let go."""
        return self._hint("tail", 1)

    def _exists(self, seq: int) -> bool:
        try:
            self.store.read(layout.entry(seq), 0, 0)
        except FileNotFoundError:
            return False
        return True

    def lists(self, change_id: str, since: float, scan: int = SCAN) -> bool:
        """Whether an entry of ``change_id`` is among the newest ones, read back to the first
        made before ``since`` (at most ``scan``)."""
        for entry in self.newest_first(scan=scan):
            if entry.id == change_id:
                return True
            if entry.at < since:
                return False
        return False

    def newest_first(self, start: int | None = None, scan: int = SCAN) -> Iterator[TimelineEntry]:
        """Entries from ``start`` (default: the newest) back to the tail, at most ``scan`` read."""
        seq = self.head() if start is None else start
        tail = self.tail()
        while seq >= tail and scan > 0:
            found = self._read_entry(seq)
            scan -= 1
            if found is not None:
                yield found
            seq -= 1
