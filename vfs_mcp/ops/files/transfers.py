"""Moving and copying, within a mount and between mounts: plans for the one write path.

A move is one rename where the store can; otherwise a copy then a delete of the source,
refused before it starts when the destination cannot hold what it would carry (links,
special files, permission bits that matter, files the deny list hides), so nothing is
dropped on the way. A copy leaves links and hidden files out.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from vfs_mcp import changes
from vfs_mcp.changes import ABSENT, CopyTree, Expect, Plan, Put, Remove, Rename, Step
from vfs_mcp.errors import AccessDenied, AlreadyExists, Conflict, InvalidArgument, IsADirectory, NotFound
from vfs_mcp.jail.entries import Entry, Found
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import MAX_PATH_CHARS, MAX_PATH_DEPTH, Target
from vfs_mcp.ops.files.write import Wording, refused

KEPT_BITS = 0o7111
"""Permission bits a file loses on a store without modes that a move must not silently drop:
execute, setuid, setgid, sticky."""


class MoveResult(BaseModel):
    source: str
    destination: str
    type: str
    overwritten: bool


class CopyResult(BaseModel):
    source: str
    destination: str
    type: str
    bytes_copied: int
    overwritten: bool


def expect_of(entry: Entry) -> Expect:
    """What a path must still hold when a change planned on ``entry`` commits."""
    return Expect(entry.type, token=entry.token)


def destination(
    vfs: JailedFS, source: Target, dest: Target, overwrite: bool, parents: bool, wording: Wording | None = None
) -> Entry | None:
    """Check a move/copy destination before anything changes; the entry it would replace, if any."""
    if dest.is_root:
        raise AlreadyExists(f"{dest.display} is a mount root")
    if source.mount is dest.mount and (dest.rel + "/").startswith(source.rel + "/"):
        raise InvalidArgument(f"{dest.display} is inside {source.display}; choose a destination outside it")
    existing = vfs.lookup(dest, follow=True)
    if existing is None:
        if not parents and not dest.parent().is_root and vfs.lookup(dest.parent(), follow=True) is None:
            words = "parent directory {parent} does not exist; pass create_dirs=true"
            raise refused(NotFound, "parent_missing", words, wording, path=dest.display, parent=dest.parent().display)
        return None
    if not overwrite:
        words = "{path} already exists; pass overwrite=true to replace it"
        raise refused(AlreadyExists, "exists", words, wording, path=dest.display)
    if existing.type == "directory" and vfs.ls(dest):
        raise AlreadyExists(f"{dest.display} is a directory that is not empty; delete it first")
    return existing


def move_file(
    vfs: JailedFS,
    source: str,
    destination_: str,
    overwrite: bool = False,
    create_dirs: bool = False,
    recursive: bool = True,
    wording: Wording | None = None,
) -> MoveResult:
    """Move or rename a file, link or folder (``create_dirs``: making the destination's missing
    folders; a folder only with ``recursive``); ``wording``: a dialect's words for its refusals."""
    src = vfs.resolve(source, follow=False, write=True)
    dst = vfs.resolve(destination_, write=True)
    if src.is_root:
        raise AccessDenied(f"{src.display} is a mount root and cannot be moved")

    def plan() -> Plan[MoveResult]:
        entry, existing = _carried(vfs, src, dst, "move", overwrite, recursive, create_dirs, wording)
        if existing is not None and (existing.type == "directory") != (entry.type == "directory"):
            raise Conflict(f"{dst.display} is a {existing.type}; cannot replace it with a {entry.type}")
        result = MoveResult(source=src.display, destination=dst.display, type=entry.type, overwritten=bool(existing))
        replaced = ABSENT if existing is None else expect_of(existing)
        if src.mount is dst.mount and src.mount.capabilities.atomic_rename:
            return Plan(result, [Rename(src, dst, expect_of(entry), replaced, parents=create_dirs)])
        copied, _ = _copy_ops(vfs, src, dst, entry, existing, moving=True)
        return Plan(result, [*copied, Remove(src, recursive=True)])

    return changes.make(vfs, plan, touches=[src, dst])


def copy_file(
    vfs: JailedFS,
    source: str,
    destination_: str,
    overwrite: bool = False,
    recursive: bool = False,
    create_dirs: bool = True,
    wording: Wording | None = None,
) -> CopyResult:
    """Copy a file (a folder with ``recursive``), across mounts too; ``wording``: a dialect's words for its refusals."""
    src = vfs.resolve(source)
    dst = vfs.resolve(destination_, write=True)

    def plan() -> Plan[CopyResult]:
        entry, existing = _carried(vfs, src, dst, "copy", overwrite, recursive, create_dirs, wording)
        ops, size = _copy_ops(vfs, src, dst, entry, existing, moving=False)
        result = CopyResult(
            source=src.display, destination=dst.display, type=entry.type, bytes_copied=size, overwritten=bool(existing)
        )
        return Plan(result, ops)

    return changes.make(vfs, plan, touches=[dst])


def _carried(
    vfs: JailedFS,
    src: Target,
    dst: Target,
    verb: Literal["move", "copy"],
    overwrite: bool,
    recursive: bool,
    parents: bool,
    wording: Wording | None,
) -> tuple[Entry, Entry | None]:
    """What a move or copy carries (a move takes a link itself, a copy what it leads to) and
    what it would replace, checked under the write path's lock before anything changes."""
    entry = vfs.info(src, follow=verb == "copy")
    if entry.type == "directory" and not recursive:
        words = f"{{path}} is a directory; pass recursive=true to {verb} it"
        raise refused(IsADirectory, "directory", words, wording, path=src.display)
    if verb == "copy" and entry.type not in ("file", "directory"):
        raise InvalidArgument(f"{src.display} is not a regular file (a FIFO, socket or device); it cannot be copied")
    return entry, destination(vfs, src, dst, overwrite, parents, wording)


def _copy_ops(
    vfs: JailedFS, src: Target, dst: Target, entry: Entry, existing: Entry | None, *, moving: bool
) -> tuple[list[Step], int]:
    """The steps that copy ``src`` (``entry``) to ``dst`` (replacing ``existing``), and the bytes they copy."""
    verb = "moved" if moving else "copied"
    if entry.type != "directory":
        if moving:
            _check_carried(src, dst, [entry])
        # A new file gets the source's mode, as cp gives it; a replaced one keeps its own.
        mode = entry.mode if existing is None or moving else None
        replaced = ABSENT if existing is None else expect_of(existing)
        return [Put(dst, source=src, expect=replaced, mode=mode, parents=True)], entry.size
    items = _tree(vfs, src, dst, verb)
    if moving:
        _check_carried(src, dst, list(items))
        if src.mount is dst.mount:  # what the deny list hides moves too: it stays in its mount
            return [CopyTree(src, dst, None)], sum(e.size for e in items if e.type == "file")
        _check_nothing_hidden(vfs, src)
    kept = [e for e in items if e.type in ("file", "directory")]
    names = tuple((e.target.rel[len(src.rel) :].lstrip("/"), e.type) for e in kept)
    return [CopyTree(src, dst, names)], sum(e.size for e in kept if e.type == "file")


def _tree(vfs: JailedFS, source: Target, dest: Target, verb: str) -> Found:
    """Everything visible under ``source``, refused when some of it cannot be read or its
    copy's paths would be longer than any tool could name."""
    items = vfs.find(source)
    if items.skipped:
        names = ", ".join(e.path for e in items.skipped[:3])
        raise AccessDenied(
            f"{source.display} holds {len(items.skipped)} folder(s) that cannot be read ({names}); nothing was {verb}"
        )
    longest = max((len(e.target.rel) - len(source.rel) for e in items), default=0)
    deepest = max((e.target.rel.count("/") - source.rel.count("/") for e in items), default=0)
    if len(dest.display) + longest > MAX_PATH_CHARS or dest.rel.count("/") + deepest >= MAX_PATH_DEPTH:
        raise InvalidArgument(
            f"{source.display} is too deep to be {verb} to {dest.display}: its paths there would be longer than "
            f"{MAX_PATH_CHARS} characters or {MAX_PATH_DEPTH} folders deep; nothing was {verb}"
        )
    return items


def _check_nothing_hidden(vfs: JailedFS, source: Target) -> None:
    """Refuse a copy-and-delete move of a folder holding what the deny list hides: it could
    not be carried (nor shown), and deleting the source would lose it."""
    hidden = vfs.hidden_below(source)
    if hidden:
        raise AccessDenied(
            f"{source.display} holds {hidden} entries the deny list hides; they cannot be moved to another mount, "
            "so nothing was moved. Move what you can see with copy_file, or move it within its mount"
        )


def _check_carried(source: Target, dest: Target, entries: list[Entry]) -> None:
    """Refuse a copy-and-delete move that would drop what the destination cannot hold."""
    lost = {
        "symbolic links": [e for e in entries if e.type == "symlink"],
        "FIFOs, sockets or devices": [e for e in entries if e.type == "other"],
    }
    if not dest.mount.capabilities.modes:
        lost["files with execute or special permission bits"] = [
            e for e in entries if e.type == "file" and (e.mode or 0) & KEPT_BITS
        ]
    for what, found in lost.items():
        if found:
            names = ", ".join(e.path for e in found[:3]) + (", ..." if len(found) > 3 else "")
            raise InvalidArgument(
                f"cannot move {source.display} to {dest.mount.url}: {len(found)} {what} ({names}) cannot be carried "
                "there; nothing was moved. Move within one mount, or copy_file (which leaves them out) and delete "
                "the source yourself"
            )
