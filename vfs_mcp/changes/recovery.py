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
import dataclasses
import logging
import posixpath
from typing import Literal

from vfs_mcp.changes import images, store
from vfs_mcp.changes.folders import EMPTY_FOLDER
from vfs_mcp.changes.images import Changed
from vfs_mcp.changes.locks import folders_of, held
from vfs_mcp.changes.log import DONE, ID, INSTANCE, LOG, ChangeLog
from vfs_mcp.changes.prepared import Preparation, prepare
from vfs_mcp.changes.state import layout
from vfs_mcp.changes.state.records import Corrupt, Record
from vfs_mcp.changes.steps import (
    Absent,
    DirImage,
    Expect,
    FileImage,
    Image,
    LinkImage,
    Remove,
    Rename,
    Restore,
    Step,
    Stored,
    trees,
    written,
)
from vfs_mcp.errors import AccessDenied, Conflict, InvalidArgument, NotFound, VfsError
from vfs_mcp.jail.entries import sha256
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.mounts import Mount
from vfs_mcp.jail.resolve import Jail, Target

log = logging.getLogger("vfs_mcp")

State = Literal["done", "due", "half", "changed"]


def complete(vfs: JailedFS, steps: list[Step]) -> None:
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


def status(vfs: JailedFS, op: Step) -> State:
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


def _finish_half(vfs: JailedFS, op: Step) -> None:
    if isinstance(op, Remove):  # a copy cut short: everything in the folder is the copy's
        entry = store.probe(vfs, op.target)
        if entry is not None:
            store.remove(vfs, op.target, entry, recursive=True)
        return
    assert isinstance(op, Restore) and isinstance(op.image, DirImage)
    images.restore(vfs, op.target, op.image, missing=True)


def recover(vfs: JailedFS, changelog: ChangeLog) -> list[str]:
    """Finish what dead instances left under way in ``changelog``'s store, on the mounts
    ``vfs`` serves; what was done, as lines (their records stay on the timeline, which bounds
    every instance's alike: nothing to read here of every record)."""
    done: list[str] = []
    by_owner: dict[str, list[tuple[str, str]]] = {}
    for kind, change_id, owner in unfinished(changelog):
        if not (ID.fullmatch(change_id) and INSTANCE.fullmatch(owner)):
            spelt = _names(kind, change_id, owner)
            quarantine(
                changelog, spelt[1:] if kind != "change" else spelt, f"{kind} {change_id[:40]}", "not a name of ours"
            )
            continue
        by_owner.setdefault(owner, []).append((kind, change_id))
    for owner, left in by_owner.items():
        with changelog.store.claim(owner) as mine:
            if mine:  # else alive after all, or another survivor is on it
                left.sort(key=lambda item: _undo_order(changelog, *item))
                done += [
                    line for kind, change_id in left if (line := _honoured(vfs, changelog, kind, change_id, owner))
                ]
    return done


def unfinished(changelog: ChangeLog) -> list[tuple[str, str, str]]:
    """(kind, change id, owner) of what dead instances left under way: ``"change"`` cut short,
    ``"undo"`` not finished, ``"undone"`` an undo whose steps were all made."""
    found: list[tuple[str, str, str]] = []
    for item in changelog.store.listing(layout.PENDING):
        under_way = layout.under_way(item.name)
        if under_way is None:
            continue
        kind: str = under_way.kind
        owner = under_way.owner
        if kind == "undo":
            try:
                mark = changelog.store.read(layout.undo_mark(under_way.change_id))
            except FileNotFoundError:
                continue
            owner, _, state = mark.decode(errors="replace").partition(" ")
            kind = "undone" if state == DONE else "undo"
        # A name not spelt as ours is no instance to ask about: recovery quarantines it.
        if owner != changelog.store.instance and (not INSTANCE.fullmatch(owner) or not changelog.store.alive(owner)):
            found.append((kind, under_way.change_id, owner))
    return found


def _undo_order(changelog: ChangeLog, kind: str, change_id: str) -> tuple[int, tuple[float, str, str]]:
    """Changes cut short first, then undos, the newest first (those of one restore point must
    run in that order: each starts from what the newer one left)."""
    if kind == "change":
        return (0, (0.0, "", ""))
    try:
        created, owner, _ = changelog.summary(layout.record(change_id)).order
    except (OSError, Corrupt):
        return (1, (0.0, "", change_id))  # _finish says what it is
    return (1, (-created, owner, change_id))


class Untrusted(ValueError):
    """A record that cannot be honoured, whoever asks: it goes to quarantine."""


def _honoured(vfs: JailedFS, changelog: ChangeLog, kind: str, change_id: str, owner: str) -> str | None:
    """``_finish``, never fatal: a record that cannot be honoured is quarantined (logged with its
    id), one that cannot be finished now (someone changed its path since, a lock busy, the store
    unreachable) stays as it is, logged; either way the next record is looked at."""
    left = _names(kind, change_id, owner)
    try:
        return _finish(vfs, changelog, kind, change_id, owner)
    except (Corrupt, Untrusted, AccessDenied, InvalidArgument) as err:
        quarantine(changelog, left, f"{kind} {change_id}", str(err))
    except VfsError as err:
        log.error("recovery: %s %s cut short by a dead process stays as it is: %s", kind, change_id, err)
    except OSError as err:
        log.error(
            "recovery: %s %s stays as it is: the state store cannot be read or written (%s)", kind, change_id, err
        )
    except Exception as err:  # whatever a record's bytes provoke: they go aside, the server goes on
        log.exception("recovery: %s %s could not be read", kind, change_id)
        quarantine(changelog, left, f"{kind} {change_id}", repr(err))
    return None


def _names(kind: str, change_id: str, owner: str) -> list[str]:
    """The state store's names of what a dead instance left under way."""
    if kind == "change":
        return [layout.pending(change_id, owner)]
    return [layout.record(change_id), layout.undo_mark(change_id)]


def quarantine(changelog: ChangeLog, left: list[str], what: str, why: str) -> None:
    """Move ``left`` aside, into the state store's ``quarantine/`` (kept for a person to look at,
    never run), saying so in the log."""
    moved = []
    for name in left:
        aside = layout.quarantined(name)
        try:
            changelog.store.move(name, aside)
        except FileNotFoundError:
            continue
        except OSError as err:
            log.error("recovery: %s could not be moved to quarantine (%s)", name, err)
            continue
        moved.append(aside)
    log.error(
        "recovery: %s cannot be honoured (%s); moved aside to %s in the state store",
        what,
        why[:200],
        ", ".join(moved) or "nowhere (it was gone)",
    )


def _finish(vfs: JailedFS, changelog: ChangeLog, kind: str, change_id: str, owner: str) -> str | None:
    """Finish one change (``kind`` "change") or undo ("undo"; "undone": its steps all made) a
    dead instance left under way; what was done, or None when it stays as it is (logged).
    ``Corrupt``, ``Untrusted`` or the jail's refusal for a record that cannot be honoured."""
    store = changelog.store
    name = layout.pending(change_id, owner) if kind == "change" else layout.record(change_id)
    if kind == "undone":
        store.delete(name, layout.undo_mark(change_id))
        return f"undo of {change_id}: undone"
    try:
        record = changelog.read(name, vfs.served)
    except FileNotFoundError:
        if kind == "undo":  # the undo ended with its record gone: only its mark was left
            store.delete(layout.undo_mark(change_id))
        return None
    except NotFound as err:
        log.warning("recovery: %s of %s is not for this server (%s); left as it is", kind, change_id, err)
        return None
    steps = [*record.steps, *record.finish]
    if record.drops and any(t.mount.layer is not None for op in steps for t in written(op)):
        # A review's apply wrote the stores under review, not their views: finished on the stores.
        vfs = _stores_of(vfs, changelog)
        record = changelog.read(name, vfs.served)
        steps = [*record.steps, *record.finish]
    checked(vfs, steps)
    paths = [t for op in steps for t in written(op)]
    with held(vfs, folders_of(paths, [t for op in steps for t in trees(op)])):
        _sweep(paths)
        if kind == "change" and _layers_dropped(changelog, record):
            outcome = "finished" if record.finish else "kept"  # its steps were all made before
        elif kind == "change":
            outcome = _cut_short(vfs, record)
        else:
            complete(vfs, record.steps)
            outcome = "undone"
    if outcome in ("kept", "finished"):
        for url, nodes in record.drops.items():  # what it wrote leaves the layers it was pending in
            store.layer(url).drop([], nodes)
    if outcome == "kept":
        changelog.entered(record)  # its line before its record is filed: a crash between, and it is still pending
        store.move(name, layout.record(change_id))
    elif kind == "change":
        store.delete(name)
    else:
        store.delete(name, layout.undo_mark(change_id))
    line = f"{'change' if kind == 'change' else 'undo of'} {change_id} ({record.tool}): {outcome}"
    log.warning("recovery: %s", line)
    return line


def _stores_of(vfs: JailedFS, changelog: ChangeLog) -> JailedFS:
    """``vfs`` with each mount under review replaced by its store (the same policy)."""
    from vfs_mcp_backends.overlay import OverlayMount  # loaded only where a mount is under review

    mounts = [
        dataclasses.replace(m, backend=m.backend.under, review=False) if isinstance(m.backend, OverlayMount) else m
        for m in vfs.mounts
    ]
    stores = JailedFS(Jail(mounts, deny=vfs.deny))
    stores.kept.put(LOG, changelog)  # this log: no recovery of its own
    return stores


def _layers_dropped(changelog: ChangeLog, record: Record) -> bool:
    """Whether a change whose record names layer nodes (``Record.drops``, a review's apply) had
    begun to drop them: a layer holds none of them as planned any more. They are dropped only
    once every step is made, so the change is kept, not taken back (its layers cannot be)."""
    for url, nodes in record.drops.items():
        layer = changelog.store.layer(url)
        layer.fresh(force=True)
        if not layer.as_planned(nodes):
            return True
    return False


def checked(vfs: JailedFS, steps: list[Step]) -> None:
    """Every path of a record's ``steps`` spelt as the jail spells one inside its mount (and each
    path inside a folder's image), and one the jail lets a change write: ``Untrusted`` or the
    jail's refusal otherwise, before any lock is taken."""
    for op in steps:
        for target in [*written(op), *trees(op)]:
            _spelt(target.rel, allow_root=True)
        if isinstance(op, Restore):
            _inside(op.image)
    for op in steps:
        for target in written(op):
            vfs.jail.check_write(target)
        for tree in trees(op):
            vfs.jail.check_tree(tree)


def _inside(image: Image) -> None:
    if isinstance(image, DirImage):
        for rel, inner in image.inside:
            _spelt(rel, allow_root=False)
            _inside(inner)


def _spelt(rel: object, *, allow_root: bool) -> None:
    if not isinstance(rel, str):
        raise Untrusted(f"a path that is not text ({type(rel).__name__})")
    if not rel:
        if allow_root:
            return
        raise Untrusted("an empty name inside a folder's image")
    parts = rel.split("/")
    if "\x00" in rel or any(part in ("", ".", "..") for part in parts):
        raise Untrusted(f"the path {rel[:80]!r}, which is not one inside its mount")


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


def _sweep(paths: list[Target]) -> None:
    """Remove the temp files a dead writer left in the folders of ``paths``."""
    by_mount: dict[str, tuple[Mount, set[str]]] = {}
    for target in paths:
        by_mount.setdefault(target.mount.url, (target.mount, set()))[1].add(target.parent().fs_path)
    for mount, folders in by_mount.values():
        with contextlib.suppress(OSError):
            mount.backend.sweep(0, sorted(folders))
