"""Restore points: what an undo of a change "and after" takes back — the change and every later
change of the mounts it touched, newest first, found on the timeline's index (read back from its
newest entry; no listing of the records), undone as one (``vfs_mcp.ops.files.undo``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from vfs_mcp.changes.kept import touched
from vfs_mcp.changes.log import CLOCK_SKEW, ChangeLog
from vfs_mcp.changes.state import layout
from vfs_mcp.changes.state.records import Corrupt, Record, Summary
from vfs_mcp.changes.state.timeline import TimelineEntry
from vfs_mcp.errors import Conflict, Internal, TooLarge
from vfs_mcp.jail.mounts import Mount

RESTORE_CHANGES = 1_000
"""Changes one undo takes back at most (``restore_point``): a restore point further back is
refused, saying how many changes it would take back."""
RESTORE_LISTED = 10 * RESTORE_CHANGES
"""Timeline entries of any mount made since a restore point that one undo looks through at most."""


def restore_point(changelog: ChangeLog, change_id: str, mount_of: Callable[[str], Mount]) -> list[Record]:
    """The records an undo of ``change_id`` "and after" takes back, newest first: it, and
    every later change on the timeline (its index, read back from the newest: no listing of
    the records) of a mount it touched — and, from a change that touched one of those and
    another mount, of that mount too. Changes of other mounts stay, and so do changes
    already undone (their records left the log). NOT_FOUND or CONFLICT as ``load`` says;
    CONFLICT while a later change of those mounts is being made; TOO_LARGE past
    ``RESTORE_CHANGES`` changes (or ``RESTORE_LISTED`` entries of any mount made since)."""
    first = changelog.load(change_id, mount_of)
    mounts = {url for url, _ in touched([*first.steps, *first.finish])} | set(first.mounts)
    chosen: list[str] = []
    for entry in reversed(_since(changelog, first)):
        if mounts.intersection(entry.mounts) and changelog.holds(entry.id):
            chosen.append(entry.id)
            mounts.update(entry.mounts)
    if len(chosen) + 1 > RESTORE_CHANGES:
        raise TooLarge(
            f"undoing change {change_id} and every later one takes back {len(chosen) + 1} changes, more than "
            f"one undo takes back ({RESTORE_CHANGES}); undo to a later change first"
        )
    start = (first.created, first.owner, first.id)
    for under_way in _making(changelog):
        if under_way.order > start and mounts.intersection(under_way.mounts):
            raise Conflict(
                f"change {under_way.id} of {', '.join(sorted(mounts.intersection(under_way.mounts)))} is being "
                "made right now; try again in a moment"
            )
    return [changelog.load(later, mount_of) for later in reversed(chosen)] + [first]


def _since(changelog: ChangeLog, first: Record) -> list[TimelineEntry]:
    """The timeline's entries after ``first``'s, newest first (back to an entry older than it
    by more than ``CLOCK_SKEW``, where its own is gone); TOO_LARGE past ``RESTORE_LISTED``."""
    since: list[TimelineEntry] = []
    for entry in changelog.timeline.newest_first(scan=RESTORE_LISTED + 1):
        if entry.id == first.id or entry.at < first.created - CLOCK_SKEW:
            return since
        since.append(entry)
    if len(since) > RESTORE_LISTED:
        raise TooLarge(
            f"more than {RESTORE_LISTED} changes were made since change {first.id}, more than one undo looks "
            "through; undo to a later change"
        )
    return since


def _making(changelog: ChangeLog) -> Iterator[Summary]:
    """The summaries of the changes being made now (their records pending)."""
    for item in changelog.store.listing(layout.PENDING):
        under_way = layout.under_way(item.name)
        if under_way is None or under_way.kind != "change":
            continue
        try:
            yield changelog.summary(layout.pending(under_way.change_id, under_way.owner))
        except FileNotFoundError:
            continue  # made meanwhile
        except Corrupt as err:
            raise Internal(
                f"the undo log holds a record that cannot be read ({item.name}: {err}); nothing was undone"
            ) from None
