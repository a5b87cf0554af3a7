"""Committing a planned change: its steps prepared (``prepared.prepare``), made in order, and all
taken back, newest first, when one fails.

A change of one atomic step is prepared and made at once; its record is only for undo (a crash
cannot cut one step in two): written after it, or beside it while it is made where the step's
way back is known before it is made (``Journal.beside``: a file put from bytes). A change of
several steps (or one that is many store calls: a folder copied, a tree deleted) is prepared
whole first, so that its record — every step's way back, with the images it needs — is durable
in the state store before the first step is made (``Journal.pending``). Undo runs its steps one
after the other (``sequential``): the record it takes back is its own record (an undo of
several records notes each one all taken back: ``Progress``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

from vfs_mcp.changes.prepared import Key, Preparation, Prepared, many_calls, prepare
from vfs_mcp.changes.state.linked import Links
from vfs_mcp.changes.steps import Put, Remove, Step, written
from vfs_mcp.errors import TooLarge, VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp_backends import commit_scope, ensure_wanted
from vfs_mcp_backends.scopes import waiting


@dataclass
class Receipt:
    """A committed change: the steps that take it back, in the order to run them (None when
    some of what it replaced was too large to keep: it cannot be undone, ``why_not`` says why)."""

    undo: list[Step] | None
    why_not: str | None = None
    versions: dict[Key, str] = field(default_factory=dict)
    """The version tokens the store gave what the change wrote (``Preparation.versions``)."""


class Journal(Protocol):
    """Where a change of several steps is recorded before its first step (``log.ChangeLog``)."""

    def pending(self, back: list[Step], finish: list[Step]) -> None:
        """Record, durably, the steps that take the change back and those that finish it."""

    def abandoned(self) -> None:
        """The change failed and every step made was taken back: it never happened."""

    @property
    def keeps(self) -> bool:
        """Whether a change of one atomic step is recorded too, once made (for undo)."""

    def beside(self, back: Callable[[], list[Step]]) -> bool:
        """A change of one atomic step is about to be made: write its record meanwhile (its
        steps back had by calling ``back``), filed once it is made, let go by ``abandoned``
        if it fails; whether it is being written."""

    def links(self) -> Links | None:
        """Where the change keeps a file it replaces by a second name, not a copy (None: copies);
        they go with its record, or with ``abandoned``."""


class Progress(Protocol):
    """What an undo of several records notes as its steps are made (``changes._Undoing``)."""

    def made(self, index: int) -> None:
        """Prepared ``index`` is made (a failure here takes every step made back, like a step's own)."""

    def failed(self) -> None:
        """A step failed: the steps made are about to be taken back."""


def commit(
    vfs: JailedFS,
    ops: Sequence[Step],
    *,
    keep: int,
    journal: Journal | None = None,
    sequential: bool = False,
    progress: Progress | None = None,
    ahead: bool = False,
) -> tuple[Receipt, bool]:
    """Apply ``ops`` in order, all or none: a failure takes back the applied ones and raises
    (the message says whether every path is as it was). ``keep``: bytes of before-images the
    change may keep; past it a change is still made when nothing after it could fail (its last
    step), but cannot be undone. ``journal``: where the change is recorded before its first
    step when it has several (see the module's docstring). ``progress``: told of each
    ``sequential`` step made, and of a failure before the steps made are taken back. Returns
    the receipt, and whether the change was recorded before it was made. ``ahead``: recorded,
    durably, before its first step even when it has one (what the change does besides its
    steps, ``Record.drops``, must be finished by recovery after a crash)."""
    if not ahead and (sequential or (len(ops) == 1 and not many_calls(ops[0]))):
        keeping = journal if journal is not None and journal.keeps else None
        state = Preparation(keep, recorded=keeping is not None, links=keeping.links() if keeping is not None else None)
        return _one_by_one(vfs, ops, state, progress, keeping), False
    state = Preparation(keep, recorded=journal is not None, links=journal.links() if journal is not None else None)
    steps: list[Prepared] = []
    try:
        for index, op in enumerate(ops):
            steps.append(prepare(vfs, op, state, last=index == len(ops) - 1))
        unkept = next((step for step in steps if step.unkept), None)
        if unkept is not None and len(steps) > 1 and not isinstance(unkept.op, Remove):
            # After a crash, a last step whose before-image was not kept could be neither taken
            # back nor told made or not; a delete can always be finished.
            raise TooLarge(f"{unkept.unkept}; the change would not be undoable: split it")
        recorded = journal is not None and (ahead or not (len(steps) == 1 and steps[0].atomic))
        if recorded and journal is not None:
            waiting()  # its record, written and synced before its first step, names every hash
            kept = steps[:-1] if unkept is not None else steps
            journal.pending(
                [op for step in reversed(kept) for op in step.back()], [unkept.op] if unkept is not None else []
            )
    except BaseException:
        if state.links is not None:
            state.links.release()  # nothing was changed: what the steps prepared kept goes
        raise
    done = _make(vfs, steps, journal if recorded else None)
    if unkept is not None:
        return Receipt(None, unkept.unkept, state.versions), recorded
    return Receipt([op for step in reversed(done) for op in step.back()], None, state.versions), recorded


def _one_by_one(
    vfs: JailedFS, ops: Sequence[Step], state: Preparation, progress: Progress | None, journal: Journal | None = None
) -> Receipt:
    """Prepare and make each step in turn (a step may depend on what the one before did); the
    record of a change of one step is written beside it by ``journal`` where it can be."""
    done: list[Prepared] = []
    beside = False
    try:
        for index, op in enumerate(ops):
            step = prepare(vfs, op, state, last=index == len(ops) - 1, sequential=True)
            if (
                journal is not None
                and len(ops) == 1
                and not step.unkept
                and isinstance(op, Put)
                and op.data is not None
            ):
                # Its way back is known before it is made (no store call): the bytes kept, and
                # the hash of those it writes (``_digest_of``).
                beside = journal.beside(functools.partial(step.way_back, None))
            step.perform()
            if len(ops) > 1:
                step.settle()
            done.append(step)
            ensure_wanted()
            if progress is not None:
                progress.made(index)
    except BaseException as err:
        if progress is not None:
            progress.failed()
        _taken_back(vfs, done, err, journal if beside else None)
    unkept = next((step for step in done if step.unkept), None)
    if unkept is not None:
        return Receipt(None, unkept.unkept, state.versions)
    return Receipt([op for step in reversed(done) for op in step.back()], None, state.versions)


def _make(vfs: JailedFS, steps: list[Prepared], journal: Journal | None) -> list[Prepared]:
    done: list[Prepared] = []
    try:
        for step in steps:
            step.perform()
            done.append(step)
            # A call given up while a step ran (its store request already under way) changes
            # nothing in the end: what it did is taken back like any failure's.
            ensure_wanted()
    except BaseException as err:
        _taken_back(vfs, done, err, journal)
    return done


def _taken_back(vfs: JailedFS, done: list[Prepared], err: BaseException, journal: Journal | None) -> NoReturn:
    """Take back ``done`` after ``err`` and raise it again, saying whether every path is as it
    was; a journal whose change was taken back whole forgets it."""
    failed = roll_back(vfs, [step.back() for step in done]) if done else []
    if not failed and journal is not None:
        journal.abandoned()
    if done and isinstance(err, VfsError):
        state = (
            "every file is as it was" if not failed else f"{', '.join(failed[:3])} could not be put back; check them"
        )
        raise err.noted(f"nothing was changed ({state})") from err
    raise err


def roll_back(vfs: JailedFS, done: list[list[Step]]) -> list[str]:
    """Run the steps that take back ``done``, newest first; the paths that could not be put back."""
    failed: list[str] = []
    # A rollback runs even for a call given up meanwhile: it only ever puts things back.
    with commit_scope():
        for back in reversed(done):
            for op in back:
                try:
                    prepare(vfs, op, Preparation(None), last=False, sequential=True).perform()
                except Exception:
                    failed.append(written(op)[0].display)
    return failed
