"""Default profile: writing, moving, copying and deleting files and directories, and the
timeline (undo, checkpoint, history).

Each adapter calls one operation and renders its result.
"""

from __future__ import annotations

from mcp_types import CallToolResult

from vfs_mcp.changes import log_of
from vfs_mcp.changes.kept import session_journal
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.files import history as timeline
from vfs_mcp.ops.files import transfers, write
from vfs_mcp.ops.files import undo as undo_ops
from vfs_mcp.ops.text.names import plural
from vfs_mcp.profiles.args import DirArg, EncodingArg, PathArg
from vfs_mcp.profiles.results import answer
from vfs_mcp.settings import Settings

SHOWN_IDS = 20
"""Ids of the later changes a restore point's reply names in its text (its fields name all)."""


def undo(
    vfs: JailedFS,
    settings: Settings,
    path: str | None = None,
    change_id: str | None = None,
    dry_run: bool = False,
    and_after: bool = False,
) -> CallToolResult:
    changelog = log_of(vfs)
    journal = session_journal(changelog.sessions, settings.undo_limit)
    result = undo_ops.undo(vfs, changelog, journal, path, change_id, dry_run, and_after)
    lines = [f"restored {name}" for name in result.restored] + [f"removed {name}" for name in result.removed]
    head = f"{'would undo' if dry_run else 'undid'} {result.tool} (change {result.undid})"
    later = [change_id for change_id in result.undone if change_id != result.undid]
    if later:
        more = f" and {len(later) - SHOWN_IDS} more" if len(later) > SHOWN_IDS else ""
        head += f" and {plural(len(later), 'later change')}: {', '.join(later[:SHOWN_IDS])}{more}"
    if not result.undone:
        head = f"nothing changed since {result.tool} (change {result.undid}): nothing to undo"
    elif result.change_id is not None:
        head += f"\nthis undo is change {result.change_id}: undo it by that id to make it all again"
    tail = f"{plural(result.remaining, 'change')} left to undo" + (
        f"; {result.dropped} older ones were dropped (--undo-limit)" if result.dropped else ""
    )
    return answer("\n".join([head, *lines, tail]), data=result)


def checkpoint(vfs: JailedFS, settings: Settings, name: str) -> CallToolResult:
    result = timeline.checkpoint(vfs, log_of(vfs), name)
    return answer(
        f"checkpoint {result.name} is change {result.change_id}: undo(change_id={result.name!r}, and_after=true) "
        "brings these mounts back to it",
        data=result,
    )


def history(
    vfs: JailedFS, settings: Settings, path: str | None = None, limit: int = 20, cursor: str | None = None
) -> CallToolResult:
    result = timeline.history(vfs, log_of(vfs), path, limit, cursor, pending_ids(vfs))
    return answer(history_text(result), data=result)


def history_text(result: timeline.HistoryResult) -> str:
    """A history page as lines, with how to go on (or where it ends)."""
    lines = [line.line() for line in result.changes] or ["no changes"]
    if result.cursor is not None:
        lines.append(f"(older: cursor={result.cursor!r})")
    elif result.end is not None:
        lines.append(f"(end: {result.end})")
    return "\n".join(lines)


def pending_ids(vfs: JailedFS) -> set[str]:
    """The ids of the changes the review mounts hold pending (none when no mount is under review)."""
    if not any(mount.layer is not None for mount in vfs.mounts):
        return set()
    from vfs_mcp.review import Review

    return {change_id for item in Review(vfs).pending() for change_id in item.changes}


def write_file(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    content: str,
    encoding: EncodingArg = "utf-8",
    create_dirs: bool = False,
    append: bool = False,
    expected_hash: str | None = None,
) -> CallToolResult:
    limit = settings.max_write_bytes
    result = write.write_file(vfs, path, content, encoding, create_dirs, append, expected_hash, max_bytes=limit)
    verb = "Appended to" if result.appended else ("Created" if result.created else "Wrote")
    digest = f", sha256 {result.sha256}" if result.sha256 else ""
    return answer(f"{verb} {result.path} ({result.bytes_written} bytes{digest})", data=result)


def create_directory(
    vfs: JailedFS, settings: Settings, path: DirArg, parents: bool = True, exist_ok: bool = True
) -> CallToolResult:
    result = write.create_directory(vfs, path, parents, exist_ok)
    return answer(f"{'Created' if result.created else 'Already exists'}: {result.path}", data=result)


def move_file(
    vfs: JailedFS, settings: Settings, source: PathArg, destination: PathArg, overwrite: bool = False
) -> CallToolResult:
    result = transfers.move_file(vfs, source, destination, overwrite)
    return answer(f"Moved {result.source} -> {result.destination}", data=result)


def copy_file(
    vfs: JailedFS,
    settings: Settings,
    source: PathArg,
    destination: PathArg,
    overwrite: bool = False,
    recursive: bool = False,
    create_dirs: bool = True,
) -> CallToolResult:
    result = transfers.copy_file(vfs, source, destination, overwrite, recursive, create_dirs)
    return answer(f"Copied {result.source} -> {result.destination} ({result.bytes_copied} bytes)", data=result)


def delete_path(
    vfs: JailedFS, settings: Settings, path: PathArg, recursive: bool = False, force: bool = False
) -> CallToolResult:
    result = write.delete_path(vfs, path, recursive, force)
    return answer(f"Deleted {result.path}" if result.removed else f"Nothing to delete at {result.path}", data=result)
