"""undo: take back a change — the one ``change_id`` names (from any connection, process or
replica sharing the state store), or this session's newest (to one path, or any) — as a change
like any other, made of the steps its record keeps: each checks that its path is still exactly
as the change left it, all commit under the same locks, and a failed undo changes nothing.

A restore point (``and_after``): the change ``change_id`` names and every later change of the
mounts it touched (``restore_points.restore_point``: "later" is the timeline's order), taken back as one
undo, newest first — all of them or, when one file is not as its change left it, none. A
checkpoint's name stands for its id: "and after" it brings the mounts it covers back to it.

An undo is a change of its own, with its own id: its record holds the steps that make again
what it took back, so an undo of it (by that id) is a redo — and an undo of a restore point
brings back every change it took back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from pydantic import BaseModel, Field

from vfs_mcp import changes
from vfs_mcp.changes import Plan, log
from vfs_mcp.changes.images import Changed
from vfs_mcp.changes.kept import SessionJournal
from vfs_mcp.changes.log import ChangeLog, outcome
from vfs_mcp.changes.restore_points import restore_point
from vfs_mcp.changes.state.records import Record
from vfs_mcp.changes.steps import Unreadable
from vfs_mcp.errors import Conflict, InvalidArgument, NotFound, VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.ops.files.write import writable_target


class UndoResult(BaseModel):
    dry_run: bool
    change_id: str | None = Field(
        description="This undo's own change (undo it by this id to make again what it took back); "
        "None for a dry run, or when it could not be kept"
    )
    undid: str = Field(description="The change taken back (or that would be): the id or checkpoint given")
    tool: str = Field(description="The call whose change was (or would be) taken back")
    undone: list[str] = Field(description="Every change taken back (or that would be), newest first")
    restored: list[str] = Field(description="Files put back as they were")
    removed: list[str] = Field(description="Files the call had created, deleted again")
    dropped: int = Field(description="Older changes of this session the log no longer holds (its limits)")
    remaining: int = Field(description="Changes of this session still in the log")


def undo(
    vfs: JailedFS,
    changelog: ChangeLog,
    journal: SessionJournal | None,
    path: str | None = None,
    change_id: str | None = None,
    dry_run: bool = False,
    and_after: bool = False,
) -> UndoResult:
    """Take back ``change_id``, else the session's (``journal``) newest change, to ``path`` if
    given; ``and_after``: ``change_id`` and every later change of the mounts it touched.
    INVALID_ARGUMENT without an id in a request that has no session (``journal`` None), or for
    ``and_after`` without an id; TOO_LARGE when a restore point would take back more than
    ``RESTORE_CHANGES`` changes."""
    if and_after and (change_id is None or path is not None):
        raise InvalidArgument(
            "and_after takes back a change and every later one of its mounts: give change_id (and no path)"
        )
    change_id = _newest(vfs, journal, path) if change_id is None else changelog.timeline.resolve(change_id)

    found, taken = _chosen(changelog, change_id, and_after, vfs.served)
    steps = [op for record in taken for op in record.steps]
    own = None if dry_run or not taken else log.new_id()

    def result() -> UndoResult:
        restored, removed = outcome(steps)
        return UndoResult(
            dry_run=dry_run,
            change_id=own if own is not None and changelog.holds(own) else None,
            undid=change_id,
            tool=found[-1].tool if found[-1].checkpoint is None else f"checkpoint {found[-1].checkpoint}",
            undone=[record.id for record in taken],
            restored=restored,
            removed=removed,
            dropped=journal.dropped if journal else 0,
            remaining=len(journal.changes) if journal else 0,
        )

    if dry_run or not taken:
        return result()
    try:
        with changelog.undoing([record.id for record in taken], by=own):
            # Once: a file changed since is the user's to look at, not a reason to try again.
            changes.make(vfs, lambda: Plan(None, list(steps)), replans=1, undoing=taken, change_id=own)
    except Unreadable:
        if len(taken) == 1:
            changelog.discard(change_id)  # it never can be: the next undo takes back the one before
        raise
    except Changed as changed:
        raise Conflict(
            f"{changed.path} changed since {_writer(taken, changed.path)} wrote it ({changed.how}); nothing was "
            "undone (read it and fix it by hand)"
        ) from None
    return result()


def _chosen(
    changelog: ChangeLog, change_id: str, and_after: bool, mount_of: Callable[[str], Mount]
) -> tuple[list[Record], list[Record]]:
    """The records an undo of ``change_id`` finds (newest first), and those it takes back: a
    checkpoint changed nothing, and stays on the timeline to come back to again."""
    found = restore_point(changelog, change_id, mount_of) if and_after else [changelog.load(change_id, mount_of)]
    if found[-1].checkpoint is not None and not and_after:
        raise InvalidArgument(
            f"{found[-1].checkpoint!r} is a checkpoint: it changed no file; pass and_after=true to bring its mounts "
            "back to it"
        )
    return found, [record for record in found if record.checkpoint is None]


def _writer(taken: list[Record], shown: str) -> str:
    """The tool of the newest change of ``taken`` that wrote ``shown`` (the one it was checked against)."""
    for record in taken:
        if any(t.display == shown for op in record.steps for t in changes.written(op)):
            return record.tool
    return taken[0].tool


def _newest(vfs: JailedFS, journal: SessionJournal | None, path: str | None) -> str:
    if journal is None:
        raise InvalidArgument(
            "this request has no session (MCP 2026-07-28 over HTTP): pass change_id, the id the change's reply gave"
        )
    keys = None
    if path is not None:
        # The path itself (a link a change replaced), or where it leads (a file written through it).
        spelt = vfs.resolve(path, follow=False)
        keys = {(spelt.mount.url, spelt.rel)}
        with contextlib.suppress(VfsError):
            real = writable_target(vfs, spelt)
            keys.add((real.mount.url, real.rel))
    kept = journal.latest(keys)
    if kept is None:
        dropped = f"; {journal.dropped} older changes were dropped (the log's limits)" if journal.dropped else ""
        where = f" to {path}" if path is not None else ""
        unkept = f"; the last change ({journal.unkept}) was never recorded" if journal.unkept and not keys else ""
        raise NotFound(f"no change{where} to undo in this session{dropped}{unkept}")
    return kept.id
