"""The one write path. Every tool that changes files (and undo) only plans; this package
commits, in one place for every store:

    plan()            the tool reads what it needs and says what to change: a ``Plan`` of
        │             steps (``steps.py``), each with what its path must hold (``Expect``)
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from vfs_mcp.changes import confirm, log
from vfs_mcp.changes.commit import commit, roll_back
from vfs_mcp.changes.locks import Folders, covers, folders_of, held, needed_by, widen
from vfs_mcp.changes.log import ChangeLog
from vfs_mcp.changes.state import LocalState
from vfs_mcp.changes.state.linked import Links
from vfs_mcp.changes.state.records import Record
from vfs_mcp.changes.steps import (
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
    Put,
    Remove,
    Rename,
    Restore,
    Step,
    Stored,
    written,
)
from vfs_mcp.config import DEFAULT_UNDO_BYTES
from vfs_mcp.errors import Internal, Stale
from vfs_mcp.jail import state_place, versions
from vfs_mcp.jail.context import Confirms, Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.sessions import Slot
from vfs_mcp_backends.scopes import Later, labelled, waits

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
    "Plan",
    "Put",
    "Remove",
    "Rename",
    "Restore",
    "Step",
    "Stored",
    "attach",
    "log_of",
    "make",
    "written",
]

T = TypeVar("T")

REPLANS = 8
"""Plans of one change that met another writer's change at commit before it gives up (CONFLICT)."""
MADE: Slot[list[Callable[[Sequence[Step], Mapping[tuple[str, str], str]], None]]] = Slot(
    "who is told of each change made"
)
"""Where a ``JailedFS`` keeps the callables told of each change made, with its steps and the
version tokens the store gave what it wrote, by (mount URL, path) (the search index files the
bytes a change wrote: ``ops.search.index``); they never raise."""


@dataclass
class Plan(Generic[T]):
    """What a tool's plan gives: its result, and the steps that make it true."""

    result: T
    steps: list[Step] = field(default_factory=list)
    after: Callable[[], None] | None = None
    """Run once the change is made (to finish the result with what only the write knows)."""
    drops: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Nodes of pending layers the change makes the store hold (``records.Record.drops``): the
    change is recorded before its first step, and they are dropped from their layers once its
    last is made, before its record is filed (a crash between: recovery drops them)."""


def make(
    vfs: JailedFS,
    plan: Callable[[], Plan[T]],
    *,
    touches: Iterable[Target] = (),
    dry_run: bool = False,
    replans: int = REPLANS,
    undoing: Sequence[Record] = (),
    change_id: str | None = None,
) -> T:
    """Plan a change and commit it (see the module's docstring); the plan's result.

    ``touches``: the paths the change will write, when known before planning (their folders
    are locked for the first plan). ``dry_run``: plan only, without locks; nothing changes.
    ``undoing``: the records this change takes back, newest first (the plan's steps are theirs,
    in that order: they run one after the other, each record's noted in the log once all are
    made; the undo's own record, once made, holds the steps that make them again: a redo).
    ``change_id``: the change's id (default: a new one).
    """
    # Planned on, checked against and keeping what is there now, whatever version a replay pins
    # for the call's reads; what a commit reads is not an input of the call.
    with versions.unpinned(vfs.context.reads):
        return _make(vfs, plan, folders_of(touches), dry_run, replans, undoing, change_id)


def _make(
    vfs: JailedFS,
    plan: Callable[[], Plan[T]],
    folders: Folders,
    dry_run: bool,
    replans: int,
    undoing: Sequence[Record],
    change_id: str | None,
) -> T:
    if dry_run:
        return plan().result
    changelog = log_of(vfs)
    recording, confirming = vfs.context.recording, vfs.context.confirming
    asked: confirm.Question | None = None
    attempt = 0
    while True:
        # The threads a plan and its commit hand work to (hashes, the record) start as the commit
        # first waits for its store, never while it still computes (``scopes.later``).
        with held(vfs, folders), waits():
            planned = plan()
            if not planned.steps:
                return planned.result
            needed = needed_by(planned.steps)
            if not covers(folders, needed):
                widen(folders, needed)  # lock those too, and plan again under all of them (it only grows)
                continue
            question = _unconfirmed(confirming, vfs, planned.steps, len(undoing), asked)
            if question is None:
                pending = _Pending(changelog, recording, undoing, change_id, planned.drops)
                try:
                    # Each write is labelled with the change's id: a store that keeps what wrote
                    # each path (a mount under review) keeps it. An undo's writes are not labelled:
                    # a review shows the changes it left, and a discard of one takes the record of
                    # the undo that took it back with it (``Timeline.discarded``).
                    with (
                        versions.unnoted(vfs.context.reads),
                        labelled(pending.id) if not undoing else contextlib.nullcontext(),
                    ):
                        receipt, recorded = commit(
                            vfs,
                            planned.steps,
                            keep=recording.limit if recording else DEFAULT_UNDO_BYTES,
                            journal=None if undoing else pending,
                            sequential=bool(undoing),
                            progress=_Undoing(changelog, undoing) if len(undoing) > 1 else None,
                            ahead=bool(planned.drops),
                        )
                except Stale:
                    attempt += 1
                    if attempt >= replans:
                        raise
                    continue
                if planned.drops:
                    _drop(vfs, changelog, planned.drops, receipt.undo, pending)
                why_not = pending.made(receipt.undo, receipt.why_not, recorded)
                if recording is not None:
                    recording.made(pending.id, why_not)  # the call's reply names it
                for told in vfs.kept.get(MADE) or ():
                    told(planned.steps, receipt.versions)
        if question is not None and confirming is not None:
            # Asked with no lock held (a person may take minutes), then planned again under them:
            # only the very plan the person accepted is committed (``_unconfirmed``).
            confirming.ask(question)
            asked = question
            continue
        if planned.after is not None:
            planned.after()
        return planned.result


def _unconfirmed(
    confirming: Confirms | None, vfs: JailedFS, ops: list[Step], undoing: int, asked: confirm.Question | None
) -> confirm.Question | None:
    """The question ``ops`` must be asked before they are committed (None: commit them): none
    without a confirmation, or for the plan a person accepted; CONFLICT when the plan is not the
    one the person was asked about (a file changed between the question and the answer)."""
    if confirming is None:
        return None
    question: confirm.Question | None = confirming.question(vfs, ops, undoing)
    if question is None or question.key in confirming.accepted:
        return None
    if asked is not None:
        raise confirm.changed_since(asked)
    return question


def drop_layers(changelog: ChangeLog, drops: dict[str, dict[str, Any]]) -> None:
    """Drop from each pending layer the nodes ``drops`` names that are still as planned."""
    for url, nodes in drops.items():
        changelog.store.layer(url).drop([], nodes)


def _drop(
    vfs: JailedFS, changelog: ChangeLog, drops: dict[str, dict[str, Any]], undo: list[Step] | None, pending: _Pending
) -> None:
    """The layers' part of a change whose steps are made: a failure takes the steps back (the
    change never happened) and says so."""
    try:
        drop_layers(changelog, drops)
    except OSError as err:
        failed = roll_back(vfs, [undo]) if undo is not None else ["the change"]
        if not failed:
            pending.abandoned()
        state = "nothing was changed" if not failed else f"{', '.join(failed[:3])} could not be put back; check them"
        raise Internal(f"the pending layer could not be changed in the state store ({err}); {state}") from None


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

    def __init__(
        self,
        changelog: ChangeLog,
        recording: Recording | None,
        undoing: Sequence[Record] = (),
        change_id: str | None = None,
        drops: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.changelog, self.recording, self.undoing = changelog, recording, undoing
        self.drops = drops or {}
        self.tool = recording.tool if recording is not None else "undo" if undoing else "a change"
        self.id = change_id or log.new_id()
        self.created = changelog.clock()  # planned, about to commit: its place in the log
        self.written: Later[list[Step]] | None = None
        """The record being written beside the change's one step (``beside``)."""
        self.kept_by_link: Links | None = None

    def pending(self, back: list[Step], finish: list[Step]) -> None:
        try:
            self.changelog.pending(self.id, self.tool, back, finish, self.created, self.drops)
        except OSError as err:  # the log names the store; a client never learns where it is
            log.log.error("the state store %s cannot be written: %s", self.changelog.store.url, err)
            raise Internal(
                f"the state store cannot be written ({_why(err)}); nothing was changed (the server's log says more)"
            ) from None

    def abandoned(self) -> None:
        if self.written is not None:
            self.written.forgo()  # what it wrote, if it began, goes below
        self.changelog.abandoned(self.id)

    @property
    def keeps(self) -> bool:
        """An undo is kept whoever made it (a person's command too): its record is its redo."""
        return self.recording is not None or bool(self.undoing)

    def beside(self, back: Callable[[], list[Step]]) -> bool:
        self.written = self.changelog.beside(self.id, self.tool, back, self.created)
        return self.written is not None

    def links(self) -> Links | None:
        store = self.changelog.store
        if self.keeps and isinstance(store, LocalState):
            self.kept_by_link = Links(store, self.id)
        return self.kept_by_link

    def made(self, undo: list[Step] | None, why_not: str | None, recorded: bool) -> str | None:
        """The change is made: its record filed in the log; why it cannot be undone (None: it
        can, by ``self.id``)."""
        if not self.keeps:
            undo, why_not = None, "no tool call keeps it"
        try:
            if recorded:
                why_not = self.changelog.made(self.id, undo, why_not, self.tool)
            elif self.written is not None:
                why_not = self.changelog.made(self.id, self.written.result(), why_not, self.tool)
            elif self.keeps:
                why_not = self.changelog.atomic(self.tool, undo, why_not, self.created, self.id, self.undoing)
        except OSError as err:
            log.log.warning("the state store %s could not be written: %s", self.changelog.store.url, err)
            why_not = f"the state store could not be written ({_why(err)})"
        if self.kept_by_link is not None and self.kept_by_link.made and not self.changelog.holds(self.id):
            self.kept_by_link.release()  # not recorded (too large, the store failing): they are no one's
        return why_not


def log_of(vfs: JailedFS) -> ChangeLog:
    """The change log of ``vfs``'s state store (its server's, else the default one for its
    mounts, opened on first use)."""
    changelog = vfs.kept.get(log.LOG)
    if changelog is None:
        with _making:
            changelog = vfs.kept.get(log.LOG)
            if changelog is None:
                opened = vfs.kept.get(state_place.OPENER)
                try:
                    made = opened() if opened is not None else log.default_log(vfs.mounts)
                    assert isinstance(made, ChangeLog)
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
    vfs.kept.put(log.LOG, changelog)
    return changelog


_making = threading.Lock()
