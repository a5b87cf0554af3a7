"""What a capped tree lists: every level complete before the next, and no more than it shows.

A disk or a memory store walks to ``max_depth`` in one pass: it costs no network, and the
tree is cut breadth-first after. A bucket of a million keys cannot be listed whole for a
tree of 1,000 entries (a thousand list requests), so on stores whose folders are key
prefixes the listing itself stops once the cap is reached:

- it starts with one flat listing page (1,000 keys, in key order). A tree under 1,000 keys
  is that page and nothing else; while at least half of each page's keys are entries the
  tree shows (keys within ``max_depth``) and the cap is not reached, the flat listing goes
  on, so a whole tree costs its listing's pages (⌈N/1000⌉) and no more;
- otherwise (keys far deeper than ``max_depth``, or more entries than the cap) it lists
  level by level, each folder's direct children with one delimiter listing, in name order,
  as many folders at once (up to 32) as should fill the room left, and stops as soon as the
  cap is filled: the levels above the cut are complete and the cut level holds its first
  entries in name order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from vfs_mcp.jail.entries import Listing
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.walks.ignore import IGNORE_SUFFIX, LAST_IGNORE_FILE
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.ops.walks.selection import Item, Sieve, below, sifted

FLAT_SHARE = 0.5
"""A flat listing goes on while at least this share of each page's keys are entries shown."""
FOLDERS_AT_ONCE = 32
"""Folders listed concurrently, level by level (S3 mounts pool 64 connections)."""

Shown = Callable[[str, str], bool] | None
"""Whether the tree shows an entry, by its mount-relative path and type (its cap counts those);
None when it shows every entry."""


@dataclass
class TreeListing:
    """The entries a tree may show, within ``max_depth`` and kept by the sieve, in depth-first
    name order; ``complete`` is False when the listing stopped at the cap (more entries exist
    than ``items`` holds, at the last level listed or deeper)."""

    items: list[Item]
    skipped: list[str] = field(default_factory=list)
    complete: bool = True
    stopped_at: int = 0
    """When not complete: the level (1 is the root's children) of the first entry not listed."""


def tree_listing(
    vfs: JailedFS,
    root: Target,
    max_depth: int,
    cap: int,
    sieve: Sieve,
    shown: Shown,
    progress: Progress | None = None,
    sizes: bool = True,
) -> TreeListing:
    """The entries of the tree of ``root``, listed as this module's docstring says.
    ``sizes=False``: files need not be measured (a store that can skip it does; sizes may be 0)."""
    pages: list[Listing] = []
    counted = 0
    for page in vfs.pages(root, max_depth, metadata=sizes):
        pages.append(page)
        if page.last:
            items = [item for batch in sifted(sieve, root, pages) for item in batch]
            if shown is not None:
                items = [item for item in items if shown(item[0], item[1])]
            if not root.mount.capabilities.empty_dirs:
                items.sort(key=_depth_first)  # listed in key order: "a-b" before "a/"
            return TreeListing(items, [path for listed in pages for path in listed.skipped])
        new = len(page.items) if shown is None else sum(1 for rel, kind, _ in page.items if shown(rel, kind))
        counted += new
        if progress:
            progress(counted, None, f"{sum(p.listed for p in pages):,} keys listed")
        if counted > cap or new < page.listed * FLAT_SHARE:
            break
    return breadth_first(vfs, root, max_depth, cap, sieve, shown, progress)


def breadth_first(
    vfs: JailedFS,
    root: Target,
    max_depth: int,
    cap: int,
    sieve: Sieve,
    shown: Shown,
    progress: Progress | None = None,
) -> TreeListing:
    """The tree of ``root`` listed level by level with one delimiter listing a folder,
    stopping once ``cap`` entries are shown."""
    out = TreeListing([])
    level = [root]
    fanout = _Fanout()
    for depth in range(1, max_depth + 1):
        deeper: list[Target] = []
        for rel, kind, size in _children(vfs, root, level, sieve, out, fanout, cap, progress):
            if shown is not None and not shown(rel, kind):
                continue
            if len(out.items) == cap:
                out.complete, out.stopped_at = False, depth  # one more than the cap: the listing stops here
                break
            out.items.append((rel, kind, size))
            if kind == "directory" and depth < max_depth:
                deeper.append(Target(root.mount, rel))
        if not out.complete or not deeper:
            break
        level = deeper
        fanout.next_level()
    out.items.sort(key=_depth_first)
    return out


class _Fanout:
    """How many entries a folder of the level being listed holds, on average so far (the level
    above's, before any): as many folders are listed at once as should fill the room left (a
    tree of 1,000 entries whose folders hold 100 each lists 10 folders, not 32)."""

    def __init__(self) -> None:
        self.folders = self.entries = 0
        self.guess = 1.0  # the level before's average (the first level is one folder)

    def batch(self, room: int) -> int:
        per_folder = self.entries / self.folders if self.folders else self.guess
        wanted = math.ceil((room + 1) / per_folder) if per_folder > 0 else FOLDERS_AT_ONCE
        return max(1, min(FOLDERS_AT_ONCE, wanted))

    def next_level(self) -> None:
        if self.folders:
            self.guess = self.entries / self.folders
        self.folders = self.entries = 0


def _children(
    vfs: JailedFS,
    root: Target,
    folders: list[Target],
    sieve: Sieve,
    out: TreeListing,
    fanout: _Fanout,
    cap: int,
    progress: Progress | None,
) -> Iterator[Item]:
    """The entries of ``folders`` that the sieve keeps, folder after folder in order, each
    folder's in name order; as many folders are listed at once as should fill the room left,
    and none once the caller stops."""
    start = 0
    while start < len(folders):
        batch = folders[start : start + fanout.batch(cap - len(out.items))]
        start += len(batch)
        listed = vfs.ls_pages(batch, [None] * len(batch))
        if progress:
            progress(len(out.items), None, f"{start:,} of {len(folders):,} folders listed at this level")
        for folder, (entries, cursor) in zip(batch, listed, strict=True):
            fanout.folders += 1
            while True:
                # A folder's ignore files decide its entries: a page that has not passed their
                # names in name order has not shown them all yet.
                while cursor is not None and sieve.rules is not None and _before_ignore_files(entries):
                    (more, cursor), *_ = vfs.ls_pages([folder], [cursor])
                    entries += more
                if sieve.rules is not None:
                    for rel, kind, _ in entries:
                        if rel.endswith(IGNORE_SUFFIX):
                            sieve.saw(below(root, rel), kind)
                for rel, kind, size in entries:
                    if not sieve.active or sieve.keeps(below(root, rel), kind == "directory"):
                        fanout.entries += 1
                        yield rel, kind, size
                if cursor is None:
                    break
                (entries, cursor), *_ = vfs.ls_pages([folder], [cursor])


def breadth_first_cut(depths: Sequence[int], cap: int) -> tuple[list[bool], int, int]:
    """Which entries of a listing (by depth, 1 for the root's children, in depth-first order)
    a breadth-first cut at ``cap`` keeps: every level whole while it fits, then the first
    entries of the next. Also the level cut (0 when all fit) and how many of it are kept."""
    per_level = Counter(depths)
    room, level = cap, 1
    while level in per_level and per_level[level] <= room:
        room -= per_level[level]
        level += 1
    if level not in per_level:
        return [True] * len(depths), 0, 0
    keep, taken = [], 0
    for depth in depths:
        kept = depth < level or (depth == level and taken < room)
        taken += depth == level and kept
        keep.append(kept)
    return keep, level, room


def _before_ignore_files(entries: Sequence[tuple[str, str, int]]) -> bool:
    return not entries or entries[-1][0].rpartition("/")[2] < LAST_IGNORE_FILE


def _depth_first(item: Item) -> str:
    return item[0].replace("/", "\x00")
