"""Before-images kept without a copy: a file a change replaces on a local mount is given a
second name in the state store (``images/<change id>.<n>``) before the step's rename replaces
it; the rename then leaves the old content to that name, and the record names it instead of
holding its bytes. A 100 MB edit writes its 100 MB once.

Only where it is safe and possible: the mount's store can make such a name (a local folder,
not under review), the mount does not refuse hard-linked files (``deny_hardlinked``: a reader
there would see two names for a moment), the file has no other name (someone else could change
the content the record keeps through it), and the state store is on the same filesystem
(``EXDEV`` otherwise). Elsewhere the image is a copy, in the record, as before. Either way the
record keeps the content's sha256: an image changed behind its back is refused when restored.

The names go with the record (``LocalState`` deletes ``images/<id>.*`` with ``<id>``'s record),
or, for a change that fails or is never recorded, with ``release``; one a killed process linked
before it wrote the record, with the next instance's sweep (``orphans``)."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable
from typing import Protocol

from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.resolve import Target

IMAGES = "images"
NAME = re.compile(r"([A-Za-z0-9_-]{22})\.[0-9]{1,6}")
"""An image's name in ``images/``: its change's id, and its number in the change."""


class Store(Protocol):
    """A state store on this machine's disk (``state.LocalState``)."""

    def place(self, name: str) -> tuple[int, str]:
        """The open folder and the name in it of the state name ``name``."""

    def delete(self, *names: str) -> None: ...


class Links:
    """The images one change (``change_id``) keeps by hard link in the local state ``store``."""

    def __init__(self, store: Store, change_id: str) -> None:
        self.store, self.change_id = store, change_id
        self.made: list[str] = []

    def keep(self, target: Target, entry: Entry) -> str | None:
        """The state name now holding the file ``target`` (``entry``: what it is) as a second
        name; None where it cannot be kept so (the caller keeps a copy)."""
        mount = target.mount
        link_out = getattr(mount.fs, "link_out", None)
        if link_out is None or not mount.is_local or mount.review or mount.deny_hardlinked or entry.links != 1:
            return None
        name = f"{IMAGES}/{self.change_id}.{len(self.made)}"
        try:
            folder, base = self.store.place(name)
            link_out(target.fs_path, folder, base)
        except OSError:  # another filesystem, a second name made meanwhile, a store that cannot
            return None
        self.made.append(name)
        return name

    def release(self) -> None:
        """The change failed or is not recorded: its images go."""
        if self.made:
            self.store.delete(*self.made)
            self.made.clear()


def unlink_images(folder: int, change_id: str) -> None:
    """The images a change's record kept (``<id>.0``, ``.1``... in the open ``images/`` folder) go
    with the record: ``LocalState`` calls this for every record it deletes."""
    for number in itertools.count():
        try:
            os.unlink(f"{change_id}.{number}", dir_fd=folder)
        except FileNotFoundError:
            return


def orphans(folder: int, started: int, named: Callable[[list[str]], set[str]]) -> list[str]:
    """The images in the open ``images/`` folder that no record names and none ever will: a
    process killed between linking a file and writing the record that names it left them.

    An image is linked before its record is written (the record names it), so an image no record
    names may be one a live instance is about to record. It is an orphan only when it was linked
    before every live instance of the store started: its ``st_ctime`` (set by the link; anything
    done to the file since makes it only newer) is before ``started``, when the oldest live
    instance made its lock file (nanoseconds, by the same filesystem's clock). An instance links
    only while it holds its lock, so an older image was linked by an instance that is dead now.
    That clock is coarse (a few ms): an image linked in the tick a live instance started in is
    left, since it could be that instance's.
    ``named`` gives, of the change ids it is asked about, those a record names (pending, filed
    or quarantined; it looks at the pending records first, then the filed ones, the way a record
    moves): what no record names, none will — its instance died before writing it (a pending
    record written before the crash would name it, recovered or not).
    """
    old: dict[str, list[str]] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            spelt = NAME.fullmatch(entry.name)
            try:
                if spelt is not None and entry.stat(follow_symlinks=False).st_ctime_ns < started:
                    old.setdefault(spelt[1], []).append(entry.name)
            except FileNotFoundError:
                continue
    if not old:
        return []
    kept = named(list(old))
    return [name for change_id, names in old.items() if change_id not in kept for name in names]
