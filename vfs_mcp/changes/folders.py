"""The folders a change makes on its way, and how they are taken back: made top down where
they are missing (``absent_folders`` finds them, ``make`` makes them), removed again only while
empty (what someone else saved in one stays)."""

from __future__ import annotations

import contextlib

from vfs_mcp.changes import store
from vfs_mcp.changes.steps import Expect, Remove, Step
from vfs_mcp.errors import NotADirectory, NotFound, VfsError
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends import commit_scope


def parent_is_there(vfs: JailedFS, target: Target) -> list[Target]:
    """NOT_FOUND unless ``target``'s parent is a folder; nothing made (an empty list)."""
    parent = target.parent()
    if target.is_root or parent.is_root:
        return []
    entry = folder(vfs, parent)
    if entry is None:
        raise NotFound(f"parent directory {parent.display} does not exist; pass create_dirs=true or create it first")
    if entry.type != "directory":
        raise NotADirectory(f"{parent.display} is not a directory; nothing can be written inside it")
    return []


def folder(vfs: JailedFS, target: Target) -> Entry | None:
    """What is at ``target``, a link inside the mount followed (the jail checked where it leads)."""
    entry = store.probe(vfs, target)
    if entry is not None and entry.type == "symlink":
        return vfs.lookup(target, follow=True) or entry
    return entry


def make(vfs: JailedFS, folders: list[Target]) -> None:
    """Make ``folders`` (each one's parent there or made before it), in order; on a failure
    the ones made go again."""
    made: list[Target] = []
    try:
        for one in folders:
            store.make_dir(vfs, one)
            made.append(one)
    except BaseException:
        unmake(vfs, made)
        raise


def absent_folders(vfs: JailedFS, target: Target) -> list[Target]:
    """``target`` and its ancestors that do not exist, deepest first; NOT_A_DIRECTORY where one
    is something else. Looks at the parent first, then down from the root to the first one
    missing (everything below it is missing too): a deep new path costs a few lookups, not one
    a level."""
    chain = [target]
    while not chain[-1].is_root:
        chain.append(chain[-1].parent())
    chain.pop()  # the mount root is there
    if not chain:
        return []
    first = folder(vfs, chain[0])
    if first is not None:
        if first.type != "directory":
            raise NotADirectory(f"{target.display} is not a directory; nothing can be made inside it")
        return []
    for depth, at in enumerate(reversed(chain[1:])):
        entry = folder(vfs, at)
        if entry is None:
            return chain[: len(chain) - depth]
        if entry.type != "directory":
            raise NotADirectory(f"{at.display} is not a directory; nothing can be made inside it")
    return chain[:1]


def unmake(vfs: JailedFS, made: list[Target]) -> None:
    """Remove folders a failed step made, deepest first, each only while it is empty (what
    someone else saved in one meanwhile stays, and so does the folder)."""
    with commit_scope():
        for one in reversed(made):
            entry = store.probe(vfs, one)
            if entry is not None and not any(True for _ in store.raw_tree(vfs, one)):
                with contextlib.suppress(VfsError):
                    store.remove(vfs, one, entry)


EMPTY_FOLDER = Expect("directory", fingerprint=(("", "directory", 0, None),))


def remove_made(made: Target) -> Step:
    """The step that takes back a folder a change made (once what the change put in it is
    gone, as the steps before it see to): remove it while it is empty."""
    return Remove(made, EMPTY_FOLDER)
