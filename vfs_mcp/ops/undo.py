"""undo: take back the newest change this session made (to one path, or any) — a change like
any other, made of the steps the journal kept: each checks that its path is still exactly as
the change left it, all commit under the same locks, and a failed undo changes nothing."""

from __future__ import annotations

import contextlib

from pydantic import BaseModel, Field

from vfs_mcp import changes
from vfs_mcp.changes import Plan
from vfs_mcp.changes.images import Changed
from vfs_mcp.changes.journal import Journal
from vfs_mcp.changes.spool import Unreadable
from vfs_mcp.errors import Conflict, NotFound, VfsError
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.write import writable_target


class UndoResult(BaseModel):
    dry_run: bool
    tool: str = Field(description="The call whose change was (or would be) taken back")
    restored: list[str] = Field(description="Files put back as they were")
    removed: list[str] = Field(description="Files the call had created, deleted again")
    dropped: int = Field(description="Older changes the journal no longer holds (its limit)")
    remaining: int = Field(description="Changes still in the journal")


def undo(vfs: JailedFS, journal: Journal, path: str | None = None, dry_run: bool = False) -> UndoResult:
    keys = None
    if path is not None:
        # The path itself (a link a change replaced), or where it leads (a file written through it).
        spelt = vfs.resolve(path, follow=False)
        keys = {(spelt.mount.url, spelt.rel)}
        with contextlib.suppress(VfsError):
            real = writable_target(vfs, spelt)
            keys.add((real.mount.url, real.rel))
    change = journal.latest(keys)
    if change is None:
        dropped = f"; {journal.dropped} older changes were dropped (the journal's limit)" if journal.dropped else ""
        where = f" to {path}" if path is not None else ""
        raise NotFound(f"no change{where} to undo in this session{dropped}")
    for op in change.undo:
        for target in changes.written(op):
            if target.mount not in vfs.mounts:
                raise NotFound(f"the mount {target.mount.url} of this change is no longer served")

    def result(remaining: int) -> UndoResult:
        return UndoResult(
            dry_run=dry_run,
            tool=change.tool,
            restored=change.restored,
            removed=change.removed,
            dropped=journal.dropped,
            remaining=remaining,
        )

    if dry_run:
        return result(len(journal.changes))
    try:
        # Once: a file changed since is the user's to look at, not a reason to try again.
        changes.run(vfs, lambda: Plan(None, list(change.undo)), replans=1)
    except Unreadable:
        journal.remove(change)  # it never can be: the next undo takes back the one before
        raise
    except Changed as changed:
        raise Conflict(
            f"{changed.path} changed since {change.tool} wrote it ({changed.how}); nothing was undone "
            "(read it and fix it by hand)"
        ) from None
    journal.remove(change)
    return result(len(journal.changes))
