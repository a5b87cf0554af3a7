"""The locks a change holds while it is checked and committed: the folder of every path it
writes exclusively, every folder above shared, mount by mount in URL order (one global order, so
two changes never wait for each other in a circle); a folder that stays busy is CONFLICT."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from vfs_mcp.changes.steps import Step, trees, written
from vfs_mcp.errors import Conflict
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends import LockBusy

Folders = dict[str, tuple[Mount, dict[str, bool]]]
"""Folders (store paths) to lock, exclusively or shared, by mount URL."""


def folders_of(paths: Iterable[Target], whole: Iterable[Target] = ()) -> Folders:
    """The folders to lock for writing ``paths`` (and ``whole`` trees): exclusively the folder
    each path is in (and each tree itself), shared every folder above, so a change to a tree
    waits for the writers inside it and they for it."""
    found: Folders = {}

    def add(at: Target, exclusive: bool) -> None:
        mine = found.setdefault(at.mount.url, (at.mount, {}))[1]
        mine[at.fs_path] = mine.get(at.fs_path, False) or exclusive
        while not at.is_root:
            at = at.parent()
            mine.setdefault(at.fs_path, False)

    for target in paths:
        add(target.parent(), True)
    for tree in whole:
        add(tree, True)
    return found


def needed_by(ops: list[Step]) -> Folders:
    """The folders ``ops`` must hold."""
    return folders_of((t for op in ops for t in written(op)), (t for op in ops for t in trees(op)))


def covers(holding: Folders, needed: Folders) -> bool:
    """Whether ``holding`` holds every folder ``needed``, each at least as strongly."""
    return all(
        url in holding and all(holding[url][1].get(folder, False) >= exclusive for folder, exclusive in folders.items())
        for url, (_, folders) in needed.items()
    )


def widen(holding: Folders, needed: Folders) -> None:
    """Add to ``holding`` what ``needed`` holds."""
    for url, (mount, folders) in needed.items():
        mine = holding.setdefault(url, (mount, {}))[1]
        for folder, exclusive in folders.items():
            mine[folder] = mine.get(folder, False) or exclusive


@contextlib.contextmanager
def held(vfs: JailedFS, folders: Folders) -> Iterator[None]:
    """Hold every folder's lock, mount by mount in URL order; CONFLICT when one stays busy."""
    with contextlib.ExitStack() as stack:
        for url in sorted(folders):
            mount, paths = folders[url]
            with vfs.guard(mount.url):  # a folder that cannot be opened is an error of ours too
                try:
                    stack.enter_context(mount.backend.hold(paths))
                except LockBusy as busy:
                    shown = mount.display(busy.folder[len(mount.backend.root) :].strip("/"))
                    raise Conflict(
                        f"another program holds the write lock of {shown} (waited {busy.wait:g} s); "
                        "nothing was changed, try again"
                    ) from None
        yield
