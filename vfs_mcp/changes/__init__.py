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
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from vfs_mcp.changes import log
from vfs_mcp.changes.commit import commit
from vfs_mcp.changes.locks import covers, folders_of, held, needed_by, widen
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
    undoing: Record | None = None,
) -> T:
    """Plan a change and commit it (see the module's docstring); the plan's result.

    ``touches``: the paths the change will write, when known before planning (their folders
    are locked for the first plan). ``dry_run``: plan only, without locks; nothing changes.
    ``undoing``: the record this change takes back (its steps run one after the other, and the
    change gets no record of its own).
    """
    if dry_run:
        return plan().result
    changelog = log_of(vfs)
    recording = log.current()
    folders = folders_of(touches)
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
            pending = _Pending(changelog, recording.tool if recording else "a change")
            try:
                # Each write is labelled with the change's id: a store that keeps what wrote
                # each path (a mount under review) keeps it. An undo's writes are no change of their own.
                with labelled(pending.id) if undoing is None else contextlib.nullcontext():
                    receipt, recorded = commit(
                        vfs,
                        planned.ops,
                        keep=recording.limit if recording else DEFAULT_UNDO_BYTES,
                        journal=None if undoing is not None else pending,
                        sequential=undoing is not None,
                    )
            except Stale:
                attempt += 1
                if attempt >= replans:
                    raise
                continue
            if undoing is None:
                pending.made(receipt.undo, receipt.why_not, recorded)
        if planned.after is not None:
            planned.after()
        return planned.result


class _Pending:
    """A change's record in the log: written before the first step of a change of several."""

    def __init__(self, changelog: ChangeLog, tool: str) -> None:
        self.changelog, self.tool = changelog, tool
        self.id = log.new_id()

    def pending(self, back: list[Op], finish: list[Op]) -> None:
        try:
            self.changelog.pending(self.id, self.tool, back, finish)
        except OSError as err:
            raise Internal(
                f"the state store {self.changelog.store.url} cannot be written ({err.strerror or err}); "
                "nothing was changed"
            ) from None

    def abandoned(self) -> None:
        self.changelog.abandoned(self.id)

    def made(self, undo: list[Op] | None, why_not: str | None, recorded: bool) -> None:
        try:
            if recorded:
                self.changelog.made(self.id, undo, why_not)
            else:
                self.changelog.atomic(self.tool, undo, why_not, self.id)
        except OSError as err:
            log.log.warning("the state store %s could not be written: %s", self.changelog.store.url, err)
            self.changelog.unrecorded(f"the state store could not be written ({err.strerror or err})")


def log_of(vfs: JailedFS) -> ChangeLog:
    """The change log of ``vfs``'s state store (its server's, else the default one for its
    mounts, opened on first use)."""
    changelog: ChangeLog | None = vfs.caches.get(log.CACHE_KEY)
    if changelog is None:
        with _making:
            changelog = vfs.caches.get(log.CACHE_KEY)
            if changelog is None:
                opened = vfs.caches.get(log.OPENER)
                changelog = attach(vfs, opened() if opened is not None else log.default_log(vfs.mounts))
    return changelog


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
