"""The one write path. Every tool that changes files (and undo) only plans; this package
commits, in one place for every store:

    plan()            the tool reads what it needs and says what to change: a ``Plan`` of
        │             file operations (``ops``), each with what its path must hold (``Expect``)
        ▼
    lock              the folder of every path written, in one global order, across processes
        │             on stores with ``locked_writes`` (a bounded wait, then CONFLICT)
        ▼
    plan() again      under the locks, on what is there now (the first plan only named the
        │             paths; plans that know their paths up front plan once)
        ▼
    commit            each step re-checks its path's policy (mounts, read-only, deny, links)
        │             and precondition (version read: content, hash or ETag; conditional puts
        │             where the store decides) and keeps what it replaces; a change of several
        │             steps is recorded, durably, before the first is made; a failure takes
        │             back the steps made, in reverse order (``commit.py``)
        ▼
    log               the change's record, with its id, in the state store (``log.py``,
                      ``state.py``): undo is a change made of its steps, from any connection,
                      process or replica; a record a dead process left is finished by the
                      next one (``recovery.py``)

A precondition that fails at commit because someone else wrote meanwhile makes the change
plan again on the new state (a bounded number of times); a plan whose caller pinned a version
(``expected_hash``) that no longer holds says CONFLICT itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from vfs_mcp.changes import log
from vfs_mcp.changes.commit import commit
from vfs_mcp.changes.locks import Folders, covers, folders_of, held, needed_by, widen
from vfs_mcp.changes.log import ChangeLog
from vfs_mcp.changes.ops import (
    ABSENT,
    ANYTHING,
    Absent,
    Append,
    CopyTree,
    DirImage,
    Expect,
    FileImage,
    Image,
    LinkImage,
    MakeDir,
    Op,
    Put,
    Remove,
    Rename,
    Restore,
    Stored,
    written,
)
from vfs_mcp.changes.records import Record
from vfs_mcp.config import DEFAULT_UNDO_BYTES
from vfs_mcp.errors import Internal, Stale
from vfs_mcp.jail import versions
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends.scopes import labelled

__all__ = [
    "ABSENT",
    "ANYTHING",
    "Absent",
    "Append",
    "CopyTree",
    "DirImage",
    "Expect",
    "FileImage",
    "Image",
    "LinkImage",
    "MakeDir",
    "Op",
    "Plan",
    "Put",
    "Remove",
    "Rename",
    "Restore",
    "Stored",
    "attach",
    "log_of",
    "run",
    "written",
]

T = TypeVar("T")

REPLANS = 8
"""Plans of one change that met another writer's change at commit before it gives up (CONFLICT)."""


@dataclass
class Plan(Generic[T]):
    """What a tool's plan gives: its result, and the operations that make it true."""

    result: T
    ops: list[Op] = field(default_factory=list)
    after: Callable[[], None] | None = None
    """Run once the change is made (to finish the result with what only the write knows)."""


def run(
    vfs: JailedFS,
    plan: Callable[[], Plan[T]],
    *,
    touches: Iterable[Target] = (),
    dry_run: bool = False,
    replans: int = REPLANS,
    undoing: Sequence[Record] = (),
) -> T:
    """Plan a change and commit it (see the module's docstring); the plan's result.

    ``touches``: the paths the change will write, when known before planning (their folders
    are locked for the first plan). ``dry_run``: plan only, without locks; nothing changes.
    ``undoing``: the records this change takes back, newest first (the plan's steps are theirs,
    in that order: they run one after the other, each record's noted in the log once all are
    made, and the change gets no record of its own).
    """
    # Planned on, checked against and keeping what is there now, whatever version a replay pins
    # for the call's reads; what a commit reads is not an input of the call.
    with versions.unpinned():
        return _run(vfs, plan, folders_of(touches), dry_run, replans, undoing)


def _run(
    vfs: JailedFS, plan: Callable[[], Plan[T]], folders: Folders, dry_run: bool, replans: int, undoing: Sequence[Record]
) -> T:
    if dry_run:
        return plan().result
    changelog = log_of(vfs)
    recording = log.current()
    attempt = 0
    while True:
        with held(vfs, folders):
            planned = plan()
            if not planned.ops:
                return planned.result
            needed = needed_by(planned.ops)
            if not covers(folders, needed):
                widen(folders, needed)  # lock those too, and plan again under all of them (it only grows)
                continue
            pending = _Pending(changelog, recording)
            try:
                # Each write is labelled with the change's id: a store that keeps what wrote
                # each path (a mount under review) keeps it. An undo's writes are no change of their own.
                with versions.unnoted(), labelled(pending.id) if not undoing else contextlib.nullcontext():
                    receipt, recorded = commit(
                        vfs,
                        planned.ops,
                        keep=recording.limit if recording else DEFAULT_UNDO_BYTES,
                        journal=None if undoing else pending,
                        sequential=bool(undoing),
                        progress=_Undoing(changelog, undoing) if len(undoing) > 1 else None,
                    )
            except Stale:
                attempt += 1
                if attempt >= replans:
                    raise
                continue
            if not undoing:
                pending.made(receipt.undo, receipt.why_not, recorded)
        if planned.after is not None:
            planned.after()
        return planned.result


class _Undoing:
    """An undo of several records, newest first: each record's steps all made is noted in the
    log (a crash after it: recovery lets that record go, and carries on from the next), and
    taken back from the log before the steps are taken back after a failure (a crash then: the
    undo is carried to its end)."""

    def __init__(self, changelog: ChangeLog, undoing: Sequence[Record]) -> None:
        self.changelog = changelog
        self.ends: dict[int, str] = {}
        end = 0
        for record in undoing:
            end += len(record.steps)
            self.ends[end - 1] = record.id
        self.noted: list[str] = []

    def made(self, index: int) -> None:
        change_id = self.ends.get(index)
        if change_id is not None:
            self.changelog.undone(change_id)
            self.noted.append(change_id)

    def failed(self) -> None:
        for change_id in self.noted:
            try:
                self.changelog.undone(change_id, False)
            except OSError as err:
                log.log.error("the undo of %s could not be marked unfinished: %s", change_id, err)


class _Pending:
    """A change's record in the log: written before the first step of a change of several
    (crash safety), kept for undo when a tool call made it (``recording``; a program's change
    through the ``vfs`` protocol has no undo to keep it for)."""

    def __init__(self, changelog: ChangeLog, recording: log.Recording | None) -> None:
        self.changelog, self.recording = changelog, recording
        self.tool = recording.tool if recording is not None else "a change"
        self.id = log.new_id()
        self.created = changelog.clock()  # planned, about to commit: its place in the log
        self.written: Future[list[Op]] | None = None
        """The record being written beside the change's one step (``beside``)."""

    def pending(self, back: list[Op], finish: list[Op]) -> None:
        try:
            self.changelog.pending(self.id, self.tool, back, finish, self.created)
        except OSError as err:  # the log names the store; a client never learns where it is
            log.log.error("the state store %s cannot be written: %s", self.changelog.store.url, err)
            raise Internal(
                f"the state store cannot be written ({_why(err)}); nothing was changed (the server's log says more)"
            ) from None

    def abandoned(self) -> None:
        if self.written is not None:
            with contextlib.suppress(Exception):  # what it wrote, if anything, goes below
                self.written.result()
        self.changelog.abandoned(self.id)

    @property
    def keeps(self) -> bool:
        return self.recording is not None

    def beside(self, back: Callable[[], list[Op]]) -> bool:
        self.written = self.changelog.beside(self.id, self.tool, back, self.created)
        return self.written is not None

    def made(self, undo: list[Op] | None, why_not: str | None, recorded: bool) -> None:
        if self.recording is None:
            undo, why_not = None, "no tool call keeps it"
        try:
            if recorded:
                self.changelog.made(self.id, undo, why_not)
            elif self.written is not None:
                self.changelog.made(self.id, self.written.result(), why_not)
            elif self.recording is not None:
                self.changelog.atomic(self.tool, undo, why_not, self.created, self.id)
        except OSError as err:
            log.log.warning("the state store %s could not be written: %s", self.changelog.store.url, err)
            self.changelog.unrecorded(f"the state store could not be written ({_why(err)})")


def log_of(vfs: JailedFS) -> ChangeLog:
    """The change log of ``vfs``'s state store (its server's, else the default one for its
    mounts, opened on first use)."""
    changelog: ChangeLog | None = vfs.caches.get(log.CACHE_KEY)
    if changelog is None:
        with _making:
            changelog = vfs.caches.get(log.CACHE_KEY)
            if changelog is None:
                opened = vfs.caches.get(log.OPENER)
                try:
                    made = opened() if opened is not None else log.default_log(vfs.mounts)
                except OSError as err:  # the log names the store; a client never learns where it is
                    log.log.error("the state store cannot be opened: %s", err)
                    raise Internal(
                        f"the state store cannot be opened ({_why(err)}); nothing was changed (the server's log "
                        "says more)"
                    ) from None
                changelog = attach(vfs, made)
    return changelog


def _why(err: OSError) -> str:
    """What went wrong with the state store, in words that name no path of it."""
    return os.strerror(err.errno) if err.errno else type(err).__name__


def attach(vfs: JailedFS, changelog: ChangeLog) -> ChangeLog:
    """Make ``changelog`` the one ``vfs``'s changes are recorded in, once what dead instances
    left in it under way on ``vfs``'s mounts is finished (and again whenever a replica's lease
    runs out)."""
    from vfs_mcp.changes.recovery import recover

    def recovered() -> None:
        recover(vfs, changelog)

    recovered()
    changelog.store.every_lease(recovered)
    vfs.caches[log.CACHE_KEY] = changelog
    return changelog


_making = threading.Lock()
