"""Review before apply: mounts whose changes stay pending until a person accepts them.

A mount served under review (``review = true`` in a ``[[mount]]``, ``--review``,
``review=True``) keeps every change the tools make in a pending layer in the state store
(``vfs_mcp_backends.overlay``): the tools see the mount with the changes, nothing else does.
This package is how a person (or a test) looks at them and decides::

    from vfs_mcp import review

    with review.open_review(["/home/me/proj"]) as pending:
        for change in pending.pending():
            print(change.status, change.path, change.changes)
        print(pending.diff())          # one unified diff a file
        pending.apply("src/app.py")    # or a change id; nothing: everything
        pending.discard()              # the rest dropped: nothing of it left in the state store

``vfs-mcp review`` is the same on the command line, ``vfs://pending`` the same as a resource,
and ``Review(server_vfs)`` the same over a running server's mounts.

A path or a change id picks what it touches, and with it whatever it must not be parted from:
a file whole (every change to it), a move with its source. ``apply`` is one change through the
one write path, all or nothing: each path is checked against what the store held when the agent
first changed it (CONFLICT naming the file where someone changed it since: nothing applied).
The layer's entries it applies leave the layer inside that change (a crash leaves both as
before, or both as after).

A pending path the store no longer lets be read (its folder became a link that leads out of
the mount) is ``blocked``: listed, saying why, never applied and never read or written through;
``apply`` applies everything else and names it (``Applied.refused``), ``discard`` drops it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import posixpath
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from vfs_mcp import changes
from vfs_mcp.changes import log
from vfs_mcp.changes.log import ChangeLog
from vfs_mcp.errors import InvalidArgument, NotFound
from vfs_mcp.jail.context import Recording
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Config, MountSpec, merge_specs, open_mounts
from vfs_mcp.jail.resolve import Jail, Target
from vfs_mcp.review.apply import Chooser, run_apply
from vfs_mcp.review.differences import Groups, PathDifference, blocked_groups, differences
from vfs_mcp.review.shown import rendered
from vfs_mcp.review.stores import state_for
from vfs_mcp.review.under_review import Sides, jailed_under_review, sides_of, under_review

__all__ = ["Applied", "PendingFile", "Review", "jailed_under_review", "open_review", "under_review"]


@dataclass(frozen=True)
class PendingFile:
    """One path a review mount shows otherwise than its store holds it."""

    path: str
    """As the tools name it."""
    status: str
    """added, modified, deleted, moved (from ``moved_from``), replaced (a file by a folder, ...)."""
    kind: str
    """file, directory or symlink (what the view shows; for a deletion, what the store holds)."""
    changes: tuple[str, ...]
    """The ids of the changes that wrote it (those still in the change log)."""
    diff: str
    """A unified diff of a text file; for anything else a line that says what changes."""
    moved_from: str | None = None
    files: int = 0
    """Files in a folder deleted, moved or added whole."""


@dataclass(frozen=True)
class Applied:
    """What an apply wrote: the paths, and the id of its change (undo takes it back)."""

    paths: list[str]
    change_id: str | None
    refused: list[str] = dataclasses.field(default_factory=list)
    """Paths picked that could not be applied (``blocked``: they stay pending), with why."""


class Review:
    """The pending layers of the review mounts of a jailed filesystem (a server's, or one
    ``open_review`` made), and what a person does with them."""

    def __init__(self, vfs: JailedFS, changelog: ChangeLog | None = None) -> None:
        self.vfs = vfs
        seen: dict[str, Sides] = {}
        for mount in vfs.mounts:
            if mount.layer is not None:
                seen.setdefault(mount.layer.key, sides_of(mount))
        self.sides = list(seen.values())
        if not self.sides:
            raise InvalidArgument(
                "no mount is under review: serve one with --review (or review = true in its [[mount]])"
            )
        self.changelog = changelog or changes.log_of(vfs)
        self.base = JailedFS(Jail([sides.base for sides in self.sides], deny=vfs.deny))
        self.base.kept.put(log.LOG, self.changelog)  # the server's log: no recovery of its own here

    # -- looking ------------------------------------------------------------------------------

    def pending(self, *select: str) -> list[PendingFile]:
        """What is pending on every review mount (only what ``select`` picks: paths, change
        ids), in path order; each with its diff."""
        out: list[PendingFile] = []
        chooser = self._chooser(select)
        kept: dict[str, bool] = {}
        for sides in self.sides:
            found, groups = differences(sides)
            picked = chooser(sides)(found, groups)
            for difference in found:
                if difference.group in picked and not difference.moved:
                    out.append(self._pending_file(sides, difference, kept))
        return out

    def diff(self, *select: str) -> str:
        """What ``pending`` lists, as text: one unified diff a file, headed by what changed it."""
        shown = self.pending(*select)
        if not shown:
            return f"nothing pending on {', '.join(sides.layer.url for sides in self.sides)}\n"
        blocks = []
        for item in shown:
            ids = f"  [changes {', '.join(item.changes)}]" if item.changes else ""
            where = f"{item.moved_from} -> {item.path}" if item.moved_from else item.path
            blocks.append(f"{item.status} {where}{ids}\n{item.diff}")
        return "\n".join(blocks)

    def _pending_file(self, sides: Sides, difference: PathDifference, kept: dict[str, bool]) -> PendingFile:
        side = difference.view or difference.base
        assert side is not None
        moved = difference.moved_from
        return PendingFile(
            path=sides.display(difference.rel),
            status=difference.status,
            kind=side.kind,
            changes=tuple(label for label in difference.changes if self._kept(label, kept)),
            diff=rendered(sides, difference),
            moved_from=sides.display(moved) if moved is not None else None,
            files=difference.inside,
        )

    def _kept(self, change_id: str, kept: dict[str, bool]) -> bool:
        """Whether the change log still holds ``change_id`` (it was not undone, nor dropped)."""
        if change_id not in kept:
            kept[change_id] = self.changelog.holds(change_id)
        return kept[change_id]

    # -- deciding -------------------------------------------------------------------------------

    def apply(self, *select: str) -> Applied:
        """Write what is pending (only what ``select`` picks) to the mounts, through the one
        write path, all or nothing (see the module's docstring)."""
        chooser = self._chooser(select)
        refused: list[str] = []
        touches: list[Target] = []  # what the first plan locks: the roots picked, never a blocked one
        for sides in self.sides:
            found, groups = differences(sides)
            picked = chooser(sides)(found, groups)
            refused += [
                f"{sides.display(d.rel)} ({d.why})" for d in found if d.status == "blocked" and d.group in picked
            ]
            touches += [Target(sides.base, r) for g in picked - blocked_groups(found) for r in groups.members(g)]
        recording = Recording("review --apply")
        chosen = [(sides, _unblocked(chooser(sides))) for sides in self.sides]
        # The caller's call (its tally, its confirmation) applies it; its changes are this apply's.
        applying = self.base.for_call(dataclasses.replace(self.vfs.context, recording=recording))
        paths = run_apply(applying, chosen, touches)
        for sides in self.sides:
            self._clear_if_empty(sides, ())
        return Applied(paths, recording.changes[-1] if recording.changes else None, refused)

    def discard(self, *select: str) -> list[str]:
        """Drop what is pending (only what ``select`` picks); the paths dropped. A layer left
        empty leaves nothing in the state store: its records, files and the changes' records go."""
        chooser = self._chooser(select)
        shown: list[str] = []
        for sides in self.sides:
            found, groups = differences(sides)
            picked = chooser(sides)(found, groups)
            shown += [sides.display(d.rel) for d in found if d.group in picked and not d.moved]
            roots = [root for group in sorted(picked) for root in groups.members(group)]
            gone = sides.layer.drop(roots)
            self._clear_if_empty(sides, {label for node in gone for label in node.changes})
        return shown

    def _clear_if_empty(self, sides: Sides, labels: set[str] | tuple[()]) -> None:
        """An empty layer: everything of it out of the state store, with the records of the
        discarded changes that wrote only to it."""
        sides.layer.fresh(force=True)
        if sides.layer.nodes:
            return
        sides.layer.clear()
        for change_id in labels:
            self.changelog.discarded(change_id, sides.layer.url)

    # -- what a selection picks -------------------------------------------------------------------

    def _chooser(self, select: Sequence[str]) -> Callable[[Sides], Chooser]:
        """For each layer, which of its groups ``select`` picks (every group when it is empty);
        NOT_FOUND, before anything is done, for an item that picks nothing on any review mount."""
        wanted = [self._wanted(item) for item in select]

        def for_sides(sides: Sides) -> Chooser:
            def chosen(found: list[PathDifference], groups: Groups) -> set[int]:
                if not wanted:
                    return groups.every()
                return {hit for item in wanted for hit in self._hits(sides, groups, *item)}

            return chosen

        for index, item in enumerate(wanted):
            hits = [self._hits(sides, differences(sides)[1], *item) for sides in self.sides]
            if not any(hits):
                raise NotFound(f"nothing pending matches {select[index]}; `vfs-mcp review` lists what is")
        return for_sides

    def _wanted(self, item: str) -> tuple[str | None, str | None, str]:
        """(change id, or the layer key and path below its root) an item of a selection names."""
        if log.ID.fullmatch(item) and not os.path.exists(item):
            return item, None, ""
        target = self.vfs.jail.locate(item)  # names layer entries only: a link on its way is not followed
        if target.mount.layer is None:
            raise InvalidArgument(f"{target.display} is not on a mount under review")
        top = sides_of(target.mount).overlay.overlay.top
        rel = posixpath.relpath(target.fs_path, top) if target.fs_path != top else ""
        return None, target.mount.layer.key, "" if rel == "." else rel

    @staticmethod
    def _hits(sides: Sides, groups: Groups, change_id: str | None, key: str | None, rel: str) -> set[int]:
        if change_id is not None:
            nodes = sides.layer.nodes
            return {groups.group_of(path) for path, node in nodes.items() if change_id in node.changes}
        if key != sides.layer.key:
            return set()
        hits = {
            groups.group_of(root) for root in groups.roots if root == rel or root.startswith(rel + "/" if rel else "")
        }
        above = groups.root_of(rel)
        if above is not None:
            hits.add(groups.group_of(above))
        return {hit for hit in hits if hit >= 0}


def _unblocked(chooser: Chooser) -> Chooser:
    """``chooser`` without the groups that hold a blocked region."""

    def chosen(found: list[PathDifference], groups: Groups) -> set[int]:
        return chooser(found, groups) - blocked_groups(found)

    return chosen


@contextlib.contextmanager
def open_review(
    roots: Sequence[str] = (),
    *,
    config: str | os.PathLike[str] | None = None,
    state: str | None = None,
    deny: Sequence[str] = (),
) -> Iterator[Review]:
    """The review of the mounts ``roots`` (and the config file's review mounts; the current
    folder when neither names any), whose layers are in the state store ``state`` (default:
    the config's, else the one a server of these mounts uses, else the one that holds a layer
    of them)."""
    loaded = Config.load(config) if config else None
    specs = merge_specs(roots, loaded)
    specs = specs[: len(roots)] + [spec for spec in specs[len(roots) :] if spec.review]
    mounts = open_mounts(specs or [MountSpec(".")])
    store = state_for(mounts, state or (loaded.state if loaded else None))
    changelog = ChangeLog(store)
    try:
        vfs = JailedFS(Jail(under_review(mounts, store, every=True), deny=[*(loaded.deny if loaded else []), *deny]))
        review = Review(vfs, changelog)
        # What a dead apply left half made is taken back on the store itself before anything else.
        changes.attach(review.base, changelog)
        yield review
    finally:
        changelog.close()
