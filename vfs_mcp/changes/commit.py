"""Applying a planned change: every step re-checks its path's policy and precondition, keeps
what it replaces, then changes the store; a step that fails takes back the ones before it, in
reverse order. Each applied step gives the steps that take it back: a rollback runs them at
once, the undo journal keeps them for later (``ops`` is the data, ``images`` what was kept)."""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from vfs_mcp.changes import images, store
from vfs_mcp.changes.folders import make_dirs, parent_is_there, remove_made, unmake
from vfs_mcp.changes.ops import (
    ABSENT,
    Absent,
    Append,
    CopyTree,
    DirImage,
    Expect,
    FileImage,
    Image,
    LinkImage,
    MakeDir,
    Op,
    Put,
    Remove,
    Rename,
    Restore,
    Spooled,
    image_size,
    trees,
    written,
)
from vfs_mcp.errors import AccessDenied, AlreadyExists, IsADirectory, NotFound, TooLarge, VfsError
from vfs_mcp.jail.entries import Entry, sha256
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends import commit_scope, ensure_wanted

CREATE_ONLY_BYTES = 64 * 1024 * 1024
"""Largest file a copy onto a new name on an object store sends as one create-only put."""


@dataclass
class Receipt:
    """A committed change: the steps that take it back, in the order to run them (None when
    some of what it replaced was too large to keep: it cannot be undone, ``why_not`` says why)."""

    undo: list[Op] | None
    why_not: str | None = None


class _Kept:
    """Bytes of before-images a change may still keep."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def capture(self, vfs: JailedFS, target: Target, entry: Entry | None) -> Image:
        image = images.capture(vfs, target, entry, self.left)
        self.left -= image_size(image)
        return image


def commit(vfs: JailedFS, ops: Sequence[Op], *, keep: int) -> Receipt:
    """Apply ``ops`` in order, all or none: a failure takes back the applied ones and raises
    (the message says whether every path is as it was). ``keep``: bytes of before-images the
    change may keep; past it a change is still made when nothing after it could fail (its last
    step), but cannot be undone."""
    kept = _Kept(keep)
    done: list[list[Op]] = []
    why_not: str | None = None
    try:
        for index, op in enumerate(ops):
            for target in written(op):
                vfs.jail.check_write(target)
            for tree in trees(op):
                vfs.jail.check_tree(tree)
            try:
                done.append(apply(vfs, op, kept))
            except TooLarge as exc:
                if index < len(ops) - 1 or exc.__cause__ is not _UNKEPT:
                    raise
                why_not = str(exc)
                done.append([])
                apply(vfs, op, None)
            # A call given up while a step ran (its store request already under way) changes
            # nothing in the end: what it did is taken back like any failure's.
            ensure_wanted()
    except BaseException as err:
        if not done:
            raise
        failed = roll_back(vfs, done)
        state = (
            "every file is as it was" if not failed else f"{', '.join(failed[:3])} could not be put back; check them"
        )
        if isinstance(err, VfsError):
            raise err.noted(f"nothing was changed ({state})") from err
        raise
    if why_not is not None:
        return Receipt(None, why_not)
    return Receipt([inverse for step in reversed(done) for inverse in step])


def roll_back(vfs: JailedFS, done: list[list[Op]]) -> list[str]:
    """Run the steps that take back ``done``, newest first; the paths that could not be put back."""
    failed: list[str] = []
    # A rollback runs even for a call given up meanwhile: it only ever puts things back.
    with commit_scope():
        for step in reversed(done):
            for op in step:
                try:
                    apply(vfs, op, None)
                except Exception:
                    failed.append(written(op)[0].display)
    return failed


_UNKEPT = RuntimeError("a before-image over the change's budget")


def _capture(vfs: JailedFS, kept: _Kept | None, target: Target, entry: Entry | None) -> Image | None:
    if kept is None:
        return None
    try:
        return kept.capture(vfs, target, entry)
    except TooLarge as exc:
        raise TooLarge(f"{exc}; the change would not be undoable") from _UNKEPT


def apply(vfs: JailedFS, op: Op, kept: _Kept | None) -> list[Op]:
    """Check ``op``'s precondition, keep what it replaces (when ``kept``), apply it; the steps
    that take it back (meaningful only when what it replaced was kept)."""
    if isinstance(op, Put):
        return _put(vfs, op, kept)
    if isinstance(op, Append):
        return _append(vfs, op, kept)
    if isinstance(op, Remove):
        return _remove(vfs, op, kept)
    if isinstance(op, Rename):
        return _rename(vfs, op, kept)
    if isinstance(op, MakeDir):
        return [remove_made(made) for made in reversed(make_dirs(vfs, op.target))]
    if isinstance(op, CopyTree):
        return _copy_tree(vfs, op, kept)
    return _restore(vfs, op, kept)


def _present(vfs: JailedFS, target: Target) -> Entry:
    entry = store.probe(vfs, target)
    if entry is None:
        raise NotFound(f"{target.display} does not exist; list its folder to check the name")
    return entry


def _put(vfs: JailedFS, op: Put, kept: _Kept | None) -> list[Op]:
    target = op.target
    entry = store.probe(vfs, target)
    if entry is not None and entry.type == "directory":
        raise IsADirectory(f"{target.display} is a directory; give a file path")
    images.check(vfs, target, entry, op.expect)
    if entry is not None:
        _refuse_hard_links(entry)
    image: Image | None = Absent()
    if entry is not None:
        content = op.expect.content
        image = FileImage(content, entry.mode) if content is not None and kept is not None else None
        if image is None:
            image = _capture(vfs, kept, target, entry)
        elif kept is not None:
            kept.left -= len(content or b"")
    made = (
        make_dirs(vfs, target.parent(), for_a_file=True)
        if entry is None and op.parents
        else parent_is_there(vfs, target)
    )
    mode = op.mode if op.mode is not None else entry.mode if entry is not None else None
    try:
        digest = _write(vfs, op, entry, mode)
    except BaseException:
        unmake(vfs, made)
        raise
    after = Expect("file", digest=digest)
    if entry is None:
        return [Remove(target, after), *(remove_made(one) for one in reversed(made))]
    return [Restore(target, image or Absent(), after)]


def _write(vfs: JailedFS, op: Put, entry: Entry | None, mode: int | None) -> str:
    """Write a Put's bytes; their sha256."""
    target = op.target
    capabilities = target.mount.capabilities
    if op.source is not None:
        source = op.source
        size = vfs.info(source).size
        if entry is None and capabilities.conditional_writes and size <= CREATE_ONLY_BYTES:
            # A copy onto a new name lands only while the name is free: one of two copies wins.
            data = b"".join(vfs.chunks(source))
            store.put_if(vfs, target, data, token=None)
            return sha256(data)
        if source.mount is target.mount and capabilities.native_copy:
            store.native_copy(vfs, source, target)
            if mode is not None and target.mount.capabilities.modes:
                store.chmod(vfs, target, mode)
            return images._digest(vfs, target)
        return store.stream(vfs, target, vfs.chunks(source), mode=mode)
    assert op.data is not None
    if capabilities.conditional_writes and (entry is None or op.expect.token is not None):
        # The service decides: no other writer, of this server or another, slips in between.
        store.put_if(vfs, target, op.data, token=None if entry is None else op.expect.token)
    else:
        store.put(vfs, target, op.data, mode=mode)
    return op.digest() if op.digest is not None else sha256(op.data)


def _append(vfs: JailedFS, op: Append, kept: _Kept | None) -> list[Op]:
    target = op.target
    entry = _present(vfs, target)
    images.check(vfs, target, entry, op.expect)
    _refuse_hard_links(entry)
    image = _capture(vfs, kept, target, entry)
    if target.mount.capabilities.append:
        store.append(vfs, target, op.data)
    else:
        old = image.data if isinstance(image, FileImage) else store.read(vfs, target)
        if target.mount.capabilities.conditional_writes and entry.token is not None:
            store.put_if(vfs, target, old + op.data, token=entry.token)
        else:
            store.put(vfs, target, old + op.data, mode=entry.mode)
    if not isinstance(image, FileImage):
        return []
    return [Restore(target, image, Expect("file", digest=sha256(image.data + op.data)))]


def _remove(vfs: JailedFS, op: Remove, kept: _Kept | None) -> list[Op]:
    target = op.target
    if target.is_root:
        raise IsADirectory(f"{target.display} is a mount root and cannot be deleted")
    entry = _present(vfs, target)
    images.check(vfs, target, entry, op.expect)
    if entry.type == "directory" and not op.recursive and any(True for _ in store.raw_tree(vfs, target)):
        raise AlreadyExists(f"{target.display} is a directory that is not empty; pass recursive=true")
    image = _capture(vfs, kept, target, entry)
    store.remove(vfs, target, entry, recursive=op.recursive)
    return [Restore(target, image or Absent(), ABSENT)]


def _rename(vfs: JailedFS, op: Rename, kept: _Kept | None) -> list[Op]:
    source, dest = op.source, op.dest
    entry = _present(vfs, source)
    images.check(vfs, source, entry, op.expect)
    there = store.probe(vfs, dest)
    images.check(vfs, dest, there, op.dest_expect)
    replaced = _capture(vfs, kept, dest, there) if there is not None else None
    if entry.type == "directory":
        _check_hiding(vfs, source, dest, [rel for rel, _ in store.raw_tree(vfs, source)])
    made = make_dirs(vfs, dest.parent(), for_a_file=True) if there is None and op.parents else []
    if there is None and not op.parents:
        parent_is_there(vfs, dest)
    try:
        store.rename(vfs, source, dest)
    except BaseException:
        unmake(vfs, made)
        raise
    # By content, not times: a later change inside that its own undo put back leaves other times.
    moved = Expect(entry.type, fingerprint=images.fingerprint(vfs, dest, contents=True) if kept is not None else None)
    back: list[Op] = [Rename(dest, source, moved, ABSENT)]
    if replaced is not None:
        back.append(Restore(dest, replaced, ABSENT))
    return back + [remove_made(one) for one in reversed(made)]


def _check_hiding(vfs: JailedFS, source: Target, dest: Target, inside: list[str]) -> None:
    """Refuse to carry a folder where the deny list would hide, or show, some of what is in it:
    a hidden file must not become readable, nor a file land where a write is refused."""
    hidden = vfs.jail.is_hidden
    if not vfs.jail.deny:
        return
    for rel in inside:
        if hidden(posixpath.join(source.rel, rel)) != hidden(posixpath.join(dest.rel, rel)):
            raise AccessDenied(
                f"the deny list hides some of what {source.display} holds at one of its places and not at the "
                f"other ({dest.display}); nothing was moved or copied"
            )


def _copy_tree(vfs: JailedFS, op: CopyTree, kept: _Kept | None) -> list[Op]:
    source, dest = op.source, op.dest
    there = store.probe(vfs, dest)
    if there is not None and (there.type != "directory" or any(True for _ in store.raw_tree(vfs, dest))):
        raise AlreadyExists(f"{dest.display} already exists and is not an empty directory")
    names = op.names
    if names is None:
        listed = [(rel, images.kind_of(raw)) for rel, raw in store.raw_tree(vfs, source)]
        names = tuple((rel, kind) for rel, kind in listed if kind in ("file", "directory"))
    _check_hiding(vfs, source, dest, [rel for rel, _ in names])
    made = make_dirs(vfs, dest)
    modes = dest.mount.capabilities.modes
    folders: list[tuple[Target, int | None]] = []
    try:
        for rel, kind in names:
            to = Target(dest.mount, posixpath.join(dest.rel, rel))
            origin = Target(source.mount, posixpath.join(source.rel, rel))
            mode = vfs.info(origin, follow=False).mode if modes else None
            if kind == "directory":
                store.make_dir(vfs, to)
                folders.append((to, mode))
            else:
                _write(vfs, Put(to, source=origin), None, mode)
        for folder, mode in reversed(folders):  # deepest first: a read-only folder is filled before
            if mode is not None:
                store.chmod(vfs, folder, mode)
    except BaseException:
        with commit_scope():  # what the copy wrote goes, folders only while empty
            for rel, kind in reversed(names):
                at = Target(dest.mount, posixpath.join(dest.rel, rel))
                entry = store.probe(vfs, at)
                if entry is not None and (kind == "file" or not any(True for _ in store.raw_tree(vfs, at))):
                    with contextlib.suppress(VfsError):
                        store.remove(vfs, at, entry)
        unmake(vfs, made)
        raise
    copied = Expect("directory", fingerprint=images.fingerprint(vfs, dest, contents=True) if kept is not None else None)
    if made:
        return [Remove(dest, copied, recursive=True), *(remove_made(one) for one in reversed(made[:-1]))]
    return [Remove(dest, copied, recursive=True), Restore(dest, DirImage(there.mode if there else None), ABSENT)]


def _restore(vfs: JailedFS, op: Restore, kept: _Kept | None) -> list[Op]:
    target = op.target
    entry = store.probe(vfs, target)
    images.check(vfs, target, entry, op.expect)
    was = _capture(vfs, kept, target, entry) or Absent()
    replace_file = isinstance(op.image, (FileImage, Spooled)) and entry is not None and entry.type == "file"
    if entry is not None and not replace_file:
        store.remove(vfs, target, entry, recursive=True)
    if not isinstance(op.image, Absent):
        if entry is None:
            parent_is_there(vfs, target)
        images.restore(vfs, target, op.image)
    return [Restore(target, was, _after(vfs, target, op.image))]


def _after(vfs: JailedFS, target: Target, image: Image) -> Expect:
    """What ``target`` holds once ``image`` is restored there, to check before taking it back."""
    if isinstance(image, FileImage):
        return Expect("file", digest=sha256(image.data))
    if isinstance(image, Spooled):
        return Expect("file", digest=image.sha256)
    if isinstance(image, LinkImage):
        return Expect("symlink", points_to=image.points_to)
    if isinstance(image, DirImage):
        return Expect("directory", fingerprint=images.fingerprint(vfs, target))
    return ABSENT


def _refuse_hard_links(entry: Entry) -> None:
    """Defense in depth: a hard link can share a file with a place outside the mount."""
    if entry.target.mount.deny_hardlinked and (entry.links or 1) > 1:
        raise AccessDenied(f"{entry.path} has other hard links; refused on this mount (deny_hardlinked)")
