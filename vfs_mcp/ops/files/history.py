"""history and checkpoint: the timeline of changes as lines a model or a person reads, newest
first, paged; and a named point on it to come back to (``undo(NAME, and_after=true)``).

Each line: the change's id, when it was recorded, the tool, the paths it wrote (or how many),
the bytes its record keeps, and how it relates to the others — undone by X (an undo of X
makes it again), undoes Y (an undo; an undo of it is a redo), checkpoint NAME, pending under
review (a review mount holds it, not yet applied).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

from pydantic import BaseModel, Field

from vfs_mcp.changes.log import ChangeLog
from vfs_mcp.changes.state.timeline import ID, TimelineEntry, check_name
from vfs_mcp.errors import InvalidArgument, echoed
from vfs_mcp.jail.filesystem import JailedFS

MAX_LIMIT = 200
"""Lines one history page holds at most."""


class HistoryLine(BaseModel):
    change_id: str
    time: str = Field(description="When it was recorded (UTC)")
    tool: str
    paths: list[str] = Field(description="The paths it wrote (the first few: count says how many)")
    count: int
    bytes: int = Field(description="Bytes of what it replaced its record keeps (to take it back)")
    undone_by: str | None = None
    undoes: list[str] = Field(default_factory=list)
    checkpoint: str | None = None
    pending_review: bool = False

    @property
    def relation(self) -> str:
        said = []
        if self.checkpoint is not None:
            said.append(f"checkpoint {self.checkpoint}")
        if self.undoes:
            more = f" and {len(self.undoes) - 1} more" if len(self.undoes) > 1 else ""
            said.append(f"undoes {self.undoes[-1]}{more}")
        if self.undone_by is not None:
            said.append(f"undone by {self.undone_by}")
        if self.pending_review:
            said.append("pending under review")
        return "; ".join(said)

    def line(self) -> str:
        if self.checkpoint is not None:
            where = ""
        elif self.count == 1 or (self.paths and self.count <= 2):
            where = " " + ", ".join(self.paths)
        else:
            where = f" {self.count} paths"
        relation = f"  [{self.relation}]" if self.relation else ""
        return f"{self.change_id} {self.time} {self.tool}{where} {self.bytes}B{relation}"


class HistoryResult(BaseModel):
    changes: list[HistoryLine]
    cursor: str | None = Field(description="Give it back as cursor for the next (older) page; None at the end")
    end: str | None = Field(description="Where the timeline ends, once this page reaches it")


class CheckpointResult(BaseModel):
    change_id: str
    name: str
    mounts: list[str]


def history(
    vfs: JailedFS,
    changelog: ChangeLog,
    path: str | None = None,
    limit: int = 20,
    cursor: str | None = None,
    pending: Collection[str] = (),
) -> HistoryResult:
    """A page of the timeline, newest first: ``limit`` changes (of ``path``, a file or a folder,
    when given) from ``cursor`` (a previous page's) on; ``pending``: the ids a review mount
    holds pending. INVALID_ARGUMENT for a cursor that is not one."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be 1 to {MAX_LIMIT}; got {limit}")
    start = None
    if cursor is not None:
        if not cursor.isdigit():
            raise InvalidArgument(f"{echoed(cursor)} is not a history cursor: give back the cursor a page gave")
        start = int(cursor)
    match = _matcher(vfs, path)
    timeline = changelog.timeline
    served = {mount.url for mount in vfs.mounts}
    lines: list[HistoryLine] = []
    last = start if start is not None else timeline.head() + 1
    for entry in timeline.newest_first(start):
        last = entry.seq
        if entry.mounts and not served.intersection(entry.mounts):
            continue  # another server's mounts: not this one's to show
        if match is not None and not any(match(shown) for shown in entry.paths):
            continue
        lines.append(_line(entry, timeline.undone_by(entry.id), pending))
        if len(lines) == limit:
            break
    tail = timeline.tail()
    more = last - 1 >= tail
    end = None
    if not more:
        end = (
            f"older changes were let go (the timeline keeps {timeline.retention.describe()})"
            if tail > 1
            else "the start of the timeline"
        )
    return HistoryResult(changes=lines, cursor=str(last - 1) if more else None, end=end)


def _matcher(vfs: JailedFS, path: str | None) -> Callable[[str], bool] | None:
    """Whether a path an entry names is ``path`` or inside it."""
    if path is None:
        return None
    shown = vfs.resolve(path, follow=False).display.rstrip("/")

    def match(entry_path: str) -> bool:
        return entry_path == shown or entry_path.startswith(shown + "/")

    return match


def _line(entry: TimelineEntry, undone_by: str | None, pending: Collection[str]) -> HistoryLine:
    return HistoryLine(
        change_id=entry.id,
        time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(entry.at)),
        tool=entry.tool,
        paths=entry.paths,
        count=entry.count,
        bytes=entry.size,
        undone_by=undone_by,
        undoes=entry.undoes,
        checkpoint=entry.checkpoint,
        pending_review=entry.id in pending,
    )


def checkpoint(vfs: JailedFS, changelog: ChangeLog, name: str) -> CheckpointResult:
    """Record the checkpoint ``name`` of every mount ``vfs`` serves (a name given again now
    means this one); INVALID_ARGUMENT for a name that is not one, or one spelt like a change id."""
    if ID.fullmatch(check_name(name)):
        raise InvalidArgument(f"{name!r} reads as a change id; give the checkpoint a name that does not")
    mounts = [mount.url for mount in vfs.mounts if not mount.read_only]
    entry = changelog.checkpoint(name, mounts)
    return CheckpointResult(change_id=entry.id, name=name, mounts=mounts)
