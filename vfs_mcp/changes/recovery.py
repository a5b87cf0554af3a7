"""What a dead process left half done, finished: a change cut short is taken back, an undo cut
short is carried to its end — both by running the record's steps again, each only where it is
still due (SQLite's hot journal, Mercurial's ``recover``).

A step is *done* when its path already holds what it restores (the change never reached it,
or the undo already ran it): it is skipped. It is *due* when its path holds what the change
left: it runs, as an undo runs it. It is *half made* when the dead process was inside it (a
folder copied in part, a tree deleted in part): what the change made there is removed, or what
it deleted is put back, piece by piece. Anything else means someone changed the path since:
``Conflict`` names it, and the record stays for a person to look at. Running the steps again
after a crash during recovery finds the ones already run done: recovery is idempotent. The
records of one undo (a restore point) run newest first, each from what the newer one left; one
whose steps were all made before the crash (its mark says so) is only let go.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
from typing import Literal

from vfs_mcp.changes import images, store
from vfs_mcp.changes.folders import EMPTY_FOLDER
from vfs_mcp.changes.images import Changed
from vfs_mcp.changes.locks import folders_of, held
from vfs_mcp.changes.log import ChangeLog
from vfs_mcp.changes.ops import (
    Absent,
    DirImage,
    Expect,
    FileImage,
    Image,
    LinkImage,
    Op,
    Remove,
    Rename,
    Restore,
    Stored,
    trees,
    written,
)
from vfs_mcp.changes.records import Corrupt, Record
from vfs_mcp.changes.steps import Preparation, prepare
from vfs_mcp.errors import Conflict, NotFound, VfsError
from vfs_mcp.jail.entries import sha256
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Target

log = logging.getLogger("vfs_mcp")

State = Literal["done", "due", "half", "changed"]


def complete(vfs: JailedFS, steps: list[Op]) -> None:
    """Run each of ``steps`` that is due (or half made); skip those done; ``Conflict`` at the
    first whose path someone else changed (the ones before it stay run)."""
    for op in steps:
        state = status(vfs, op)
        if state == "done":
            continue
        if state == "due":
            prepare(vfs, op, Preparation(None), last=False, sequential=True).perform()
        elif state == "half":
            _finish_half(vfs, op)
        else:
            where = written(op)[0]
            raise Conflict(f"{where.display} was changed by someone else since the change was cut short")


def status(vfs: JailedFS, op: Op) -> State:
    if isinstance(op, Restore):
        held = holds(vfs, op.target, op.image)
        if held == "yes":
            return "done"
        if _expected(vfs, op.target, op.expect):
            return "due"
        return "half" if held == "part" else "changed"
    if isinstance(op, Remove):
        entry = store.probe(vfs, op.target)
        if entry is None:
            return "done"
        if _expected(vfs, op.target, op.expect):
            return "due"
        if op.expect == EMPTY_FOLDER and entry.type == "directory":
            return "done"  # a folder the change made, where someone else has saved since: it stays
        if op.expect.fingerprint is not None and entry.type == "directory" and _part_of(vfs, op.target, op.expect):
            return "half"
        return "changed"
    if isinstance(op, Rename):
        if store.probe(vfs, op.source) is None and store.probe(vfs, op.dest) is not None:
            return "done"
        if _expected(vfs, op.source, op.expect) and store.probe(vfs, op.dest) is None:
            return "due"
        return "changed"
    return "changed"


def _expected(vfs: JailedFS, target: Target, expect: Expect) -> bool:
    try:
        images.check(vfs, target, store.probe(vfs, target), expect)
    except Changed:
        return False
    return True


def holds(vfs: JailedFS, target: Target, image: Image) -> Literal["yes", "part", "no"]:
    """Whether ``target`` holds ``image`` (``part``: a folder holding some of it, nothing else)."""
    entry = store.probe(vfs, target)
    if isinstance(image, Absent):
        return "yes" if entry is None else "no"
    if entry is None:
        return "no"
    if isinstance(image, (FileImage, Stored)):
        digest = image.sha256 if isinstance(image, Stored) else sha256(image.data)
        return "yes" if entry.type == "file" and images._digest(vfs, target) == digest else "no"
    if isinstance(image, LinkImage):
        return "yes" if entry.type == "symlink" and store.readlink(vfs, target) == image.points_to else "no"
    if not isinstance(image, DirImage) or entry.type != "directory":
        return "no"
    wanted = dict(image.inside)
    count = 0
    for rel, raw in store.raw_tree(vfs, target):
        count += 1
        inner = wanted.get(rel)
        if inner is None:
            return "no"
        if isinstance(inner, DirImage):
            if images.kind_of(raw) != "directory":
                return "no"
        elif holds(vfs, Target(target.mount, posixpath.join(target.rel, rel)), inner) == "no":
            return "no"
    return "yes" if count == len(wanted) else "part"


def _part_of(vfs: JailedFS, target: Target, expect: Expect) -> bool:
    """Whether the folder ``target`` holds only entries ``expect``'s fingerprint lists, as it lists them."""
    assert expect.fingerprint is not None
    listed = {item[0]: item for item in expect.fingerprint if item[0]}
    for rel, raw in store.raw_tree(vfs, target):
        item = listed.get(rel)
        if item is None or item[1] != images.kind_of(raw):
            return False
        if item[1] == "file" and int(raw.get("size") or 0) != item[2]:
            return False
    return True


def _finish_half(vfs: JailedFS, op: Op) -> None:
    if isinstance(op, Remove):  # a copy cut short: everything in the folder is the copy's
        entry = store.probe(vfs, op.target)
        if entry is not None:
            store.remove(vfs, op.target, entry, recursive=True)
        return
    assert isinstance(op, Restore) and isinstance(op.image, DirImage)
    images.restore_missing(vfs, op.target, op.image)


def recover(vfs: JailedFS, changelog: ChangeLog) -> list[str]:
    """Finish what dead instances left under way in ``changelog``'s store, on the mounts
    ``vfs`` serves; what was done, as lines (their records stay on the timeline, which bounds
    every instance's alike: nothing to read here of every record)."""
    done: list[str] = []
    by_owner: dict[str, list[tuple[str, str]]] = {}
    for kind, change_id, owner in changelog.unfinished():
        by_owner.setdefault(owner, []).append((kind, change_id))
    for owner, left in by_owner.items():
        with changelog.store.claim(owner) as mine:
            if mine:  # else alive after all, or another survivor is on it
                left.sort(key=lambda item: _undo_order(changelog, *item))
                done += [line for kind, change_id in left if (line := _finish(vfs, changelog, kind, change_id, owner))]
    return done


def _undo_order(changelog: ChangeLog, kind: str, change_id: str) -> tuple[int, tuple[float, str, str]]:
    """Changes cut short first, then undos, the newest first (those of one restore point must
    run in that order: each starts from what the newer one left)."""
    if kind == "change":
        return (0, (0.0, "", ""))
    try:
        created, owner, _ = changelog.summary(f"changes/{change_id}.rec").order
    except (OSError, Corrupt):
        return (1, (0.0, "", change_id))  # _finish says what it is
    return (1, (-created, owner, change_id))


def _finish(vfs: JailedFS, changelog: ChangeLog, kind: str, change_id: str, owner: str) -> str | None:
    """Finish one change (``kind`` "change") or undo ("undo"; "undone": its steps all made) a
    dead instance left under way; what was done, or None when it stays as it is (logged)."""
    store = changelog.store
    name = f"pending/{change_id}.{owner}.rec" if kind == "change" else f"changes/{change_id}.rec"
    if kind == "undone":
        store.delete(name, f"pending/{change_id}.undo")
        return f"undo of {change_id}: undone"
    try:
        record = changelog.read(name, lambda url: _served(vfs, url))
    except FileNotFoundError:
        if kind == "undo":  # the undo ended with its record gone: only its mark was left
            store.delete(f"pending/{change_id}.undo")
        return None
    except (Corrupt, NotFound) as err:
        log.warning("recovery: %s of %s cannot be read (%s); left as it is", kind, change_id, err)
        return None
    steps = [*record.steps, *record.finish]
    paths = [t for op in steps for t in written(op)]
    with held(vfs, folders_of(paths, [t for op in steps for t in trees(op)])):
        _sweep(paths)
        try:
            if kind == "change":
                outcome = _cut_short(vfs, record)
            else:
                complete(vfs, record.steps)
                outcome = "undone"
        except VfsError as err:
            log.error("recovery: %s %s cut short by a dead process stays as it is: %s", kind, change_id, err)
            return None
    if outcome == "kept":
        store.move(name, f"changes/{change_id}.rec")
        changelog.entered(record)
    elif kind == "change":
        store.delete(name)
    else:
        store.delete(name, f"pending/{change_id}.undo")
    line = f"{'change' if kind == 'change' else 'undo of'} {change_id} ({record.tool}): {outcome}"
    log.warning("recovery: %s", line)
    return line


def _cut_short(vfs: JailedFS, record: Record) -> str:
    """A change a dead process was making: made whole (every step due) it stays, finished when
    its last step was a delete it could not keep; made in part it is taken back. Where someone
    else changed one of its paths since, nothing is guessed: ``Conflict`` names the path."""
    states = [status(vfs, op) for op in record.steps]
    if "changed" in states:
        where = written(record.steps[states.index("changed")])[0]
        raise Conflict(f"{where.display} was changed by someone else since the change was cut short")
    if all(state == "due" for state in states):
        if not record.finish:
            return "kept"
        complete(vfs, record.finish)
        return "finished"
    complete(vfs, record.steps)
    return "taken back"


def _is_served(vfs: JailedFS, url: str) -> bool:
    return any(mount.url == url for mount in vfs.mounts)


def _served(vfs: JailedFS, url: str) -> Mount:
    for mount in vfs.mounts:
        if mount.url == url:
            return mount
    raise NotFound(f"the mount {url} is not served here")


def _sweep(paths: list[Target]) -> None:
    """Remove the temp files a dead writer left in the folders of ``paths``."""
    by_mount: dict[str, tuple[Mount, set[str]]] = {}
    for target in paths:
        by_mount.setdefault(target.mount.url, (target.mount, set()))[1].add(target.parent().fs_path)
    for mount, folders in by_mount.values():
        with contextlib.suppress(OSError):
            mount.backend.sweep(0, sorted(folders))
