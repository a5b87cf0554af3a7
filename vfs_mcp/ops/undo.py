"""undo: take back the newest change this session made (to one path, or any), only where
every file it touched is still exactly as it left them."""

from __future__ import annotations

import contextlib

from pydantic import BaseModel, Field

from vfs_mcp.errors import Conflict, NotFound
from vfs_mcp.filesystem import JailedFS
from vfs_mcp.jail import Target
from vfs_mcp.journal import Change, Journal


class UndoResult(BaseModel):
    dry_run: bool
    tool: str = Field(description="The call whose change was (or would be) taken back")
    restored: list[str] = Field(description="Files put back as they were")
    removed: list[str] = Field(description="Files the call had created, deleted again")
    dropped: int = Field(description="Older changes the journal no longer holds (its limit)")
    remaining: int = Field(description="Changes still in the journal")


def undo(vfs: JailedFS, journal: Journal, path: str | None = None, dry_run: bool = False) -> UndoResult:
    key = None
    if path is not None:
        target = vfs.resolve(path, follow=False)
        key = (target.mount.url, target.rel)
    change = journal.latest(key)
    if change is None:
        dropped = f"; {journal.dropped} older changes were dropped (the journal's limit)" if journal.dropped else ""
        where = f" to {path}" if path is not None else ""
        raise NotFound(f"no change{where} to undo in this session{dropped}")
    targets = {f.key: _target(vfs, f.key) for f in change.files}
    for state in change.files:
        if vfs.state_after(targets[state.key]) != state.after:
            raise Conflict(
                f"{state.display} changed since {change.tool} wrote it; nothing was undone (read it and fix it by hand)"
            )
    restored = [f.display for f in change.files if f.before is not None]
    removed = [f.display for f in change.files if f.before is None]
    if not dry_run:
        _restore(vfs, change, targets)
        journal.remove(change)
    return UndoResult(
        dry_run=dry_run,
        tool=change.tool,
        restored=restored,
        removed=removed,
        dropped=journal.dropped,
        remaining=len(journal.changes),
    )


def _target(vfs: JailedFS, key: tuple[str, str]) -> Target:
    mount = next((m for m in vfs.mounts if m.url == key[0]), None)
    if mount is None:
        raise NotFound(f"the mount {key[0]} of this change is no longer served")
    return Target(mount, key[1])


def _restore(vfs: JailedFS, change: Change, targets: dict[tuple[str, str], Target]) -> None:
    # Created paths go first (a folder moved there), then the old files come back.
    for state in change.files:
        if state.before is None:
            with contextlib.suppress(NotFound):
                vfs.rm(targets[state.key], recursive=True)
    for state in change.files:
        if state.before is not None:
            target = targets[state.key]
            vfs._ensure_parent(target, create_dirs=True)
            vfs.put(target, state.before, follow=False, permissions=state.mode)
