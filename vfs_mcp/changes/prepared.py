"""Each kind of step of a change, prepared: ``prepare`` re-checks the step's path (policy,
precondition), keeps what the step replaces (within the change's budget) and says which steps
take it back, before anything is changed; ``Prepared.perform`` then makes the store calls. Steps
prepared one after the other see what the earlier ones will have done (``Preparation``: the
folders they make, the files they read, the paths they write), so a change of several steps can
be prepared whole before its first step is made, and its record written first (``commit``)."""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from vfs_mcp.changes import images, store
from vfs_mcp.changes.folders import absent_folders, make, parent_is_there, remove_made, unmake
from vfs_mcp.changes.state.linked import Links
from vfs_mcp.changes.steps import (
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
    Put,
    Remove,
    Rename,
    Restore,
    Step,
    Stored,
    image_size,
    trees,
    written,
)
from vfs_mcp.errors import (
    AccessDenied,
    AlreadyExists,
    Internal,
    IsADirectory,
    NotFound,
    Stale,
    TooLarge,
    VfsError,
)
from vfs_mcp.jail.entries import Entry, sha256, sha256_aside
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends import commit_scope

CREATE_ONLY_BYTES = 64 * 1024 * 1024
"""Largest file a copy onto a new name on an object store sends as one create-only put."""

Key = tuple[str, str]


@dataclass
class Prepared:
    """One step, checked, with what it replaces kept: ``run`` makes it (the digest of a
    file it writes, when it writes one) and ``back`` gives the steps that take it back."""

    op: Step
    run: Callable[[], str | None]
    way_back: Callable[[str | None], list[Step]]
    atomic: bool = True
    """One store call, or none: a crash leaves it made or not, never half."""
    unkept: str | None = None
    """Why what it replaces could not be kept (the change's budget): it cannot be taken back."""
    digest: str | None = None

    settled: list[Step] | None = None

    def back(self) -> list[Step]:
        return self.settled if self.settled is not None else self.way_back(self.digest)

    def perform(self) -> None:
        self.digest = self.run()

    def settle(self) -> None:
        """Fix the steps back as they are now, right after the step: what they expect to find
        is what it left, not what later steps of the change (one after the other) leave."""
        self.settled = self.way_back(self.digest)


@dataclass
class Preparation:
    """What the steps prepared so far will have done, for the ones after them."""

    left: int | None
    """Bytes of before-images the change may still keep (None: keep nothing)."""
    recorded: bool = False
    """Whether the images kept go into a record (which names each one's sha256): a file's bytes
    the step has at hand are then hashed on another thread while the step is made."""
    made: set[Key] = field(default_factory=set)
    """Folders an earlier step makes."""
    touched: set[Key] = field(default_factory=set)
    read: dict[Key, bytes] = field(default_factory=dict)
    """Files a step read whole (to keep them, to hash a copy's source): read once a change."""
    links: Links | None = None
    """Where a file a step replaces whole is kept by a second name, not a copy (a change
    recorded in a local state store): ``linked.py``."""
    versions: dict[Key, str] = field(default_factory=dict)
    """The version tokens the store gave the objects the steps wrote (a conditional put's
    answer: GCS's generation, Azure's ETag), for whoever is told of the change made."""


def many_calls(op: Step) -> bool:
    """Whether ``op`` may take many store calls whatever its path holds (a crash can cut it)."""
    return isinstance(op, CopyTree) or (isinstance(op, Remove) and op.recursive)


# -- preparing each kind of step ---------------------------------------------------------------


def prepare(vfs: JailedFS, op: Step, state: Preparation, *, last: bool, sequential: bool = False) -> Prepared:
    """Check ``op``'s paths (policy, precondition) and keep what it replaces; the step, ready."""
    for target in written(op):
        vfs.jail.check_write(target)
        key = (target.mount.url, target.rel)
        if key in state.touched and not sequential:
            raise Internal(f"one change writes {target.display} twice; plan it as one step")
        state.touched.add(key)
        if sequential:
            state.read.pop(key, None)  # an earlier step may have written it since it was read
    for tree in trees(op):
        vfs.jail.check_tree(tree)
    try:
        if isinstance(op, Put):
            return _put(vfs, op, state)
        if isinstance(op, Append):
            return _append(vfs, op, state)
        if isinstance(op, Remove):
            return _remove(vfs, op, state)
        if isinstance(op, Rename):
            return _rename(vfs, op, state)
        if isinstance(op, MakeDir):
            return _make_dir(vfs, op, state)
        if isinstance(op, CopyTree):
            return _copy_tree(vfs, op, state)
        return _restore(vfs, op, state)
    except _Unkept as unkept:
        if not last:
            raise unkept.error from None
        return unkept.step


class _Unkept(Exception):
    """A step whose before-image is over the change's budget: made only as the change's last."""

    def __init__(self, error: TooLarge, step: Prepared) -> None:
        super().__init__(str(error))
        self.error, self.step = error, step


def _capture(vfs: JailedFS, state: Preparation, target: Target, entry: Entry | None) -> Image | None:
    """What ``target`` holds, kept within the change's budget; None when nothing is kept."""
    if state.left is None:
        return None
    key = (target.mount.url, target.rel)
    if entry is not None and entry.type == "file" and key in state.read and entry.size <= state.left:
        image: Image = FileImage(state.read[key], entry.mode)
    else:
        image = images.capture(vfs, target, entry, state.left)
    if isinstance(image, FileImage):
        state.read[key] = image.data
    state.left -= image_size(image)
    return image


def _keep(vfs: JailedFS, state: Preparation, target: Target, entry: Entry | None, unkept: Prepared) -> Image | None:
    try:
        return _capture(vfs, state, target, entry)
    except TooLarge as exc:
        unkept.unkept = str(exc)
        raise _Unkept(TooLarge(f"{exc}; the change would not be undoable"), unkept) from None


def _present(vfs: JailedFS, target: Target) -> Entry:
    entry = store.probe(vfs, target)
    if entry is None:
        raise NotFound(f"{target.display} does not exist; list its folder to check the name")
    return entry


def _as_read(vfs: JailedFS, target: Target, expect: Expect, state: Preparation) -> tuple[Entry | None, bytes | None]:
    """What is at the file ``target`` a step replaces, and its bytes when they are at hand. Where
    the store's writes are conditional and the plan read a version, no lookup is sent: the
    conditional write checks the version again, at the store. The plan's bytes stand for the
    file's (an S3 edit is one GET and one PUT); without them one GET gives the version and the
    bytes the step keeps. Elsewhere, a lookup."""
    if not target.mount.capabilities.conditional_writes:
        return store.probe(vfs, target), None
    if expect.state == "absent":
        return None, None  # the write is create-only: the store refuses it if something came meanwhile
    if expect.token is None:
        return store.probe(vfs, target), None
    if expect.content is not None:
        raw = {"type": "file", "size": len(expect.content), "ETag": expect.token}
        return vfs._entry(target, raw), expect.content
    try:
        return vfs.read_whole(target, state.left or 0)
    except NotFound:
        return None, None


def _replaced(
    vfs: JailedFS,
    state: Preparation,
    target: Target,
    entry: Entry,
    data: bytes | None,
    step: Prepared,
    renamed: bool = False,
    hashed: Callable[[], str] | None = None,
) -> Image | None:
    """What a step that replaces the file ``target`` keeps of it: ``data``, the bytes it holds
    when the step has them (it checks they are still there; ``hashed``: their sha256 when the
    plan has it hashed), else a capture; for a step that
    replaces it by a rename (``renamed``), the file itself too, by a second name where it can."""
    if data is not None and state.left is not None and len(data) <= state.left:
        state.left -= len(data)
        digest = (hashed or sha256_aside(data)) if state.recorded else None
        image: Image | None = FileImage(data, entry.mode, digest)
    else:
        image = _keep(vfs, state, target, entry, step)
    if renamed and state.links is not None and isinstance(image, FileImage):
        kept = state.links.keep(target, entry)
        if kept is not None:
            image = FileImage(image.data, image.mode, image.digest, kept)
    return image


def _missing(vfs: JailedFS, state: Preparation, target: Target, *, for_a_file: bool) -> list[Target]:
    """The folders to make, top down, for ``target`` (a folder) to be there: those missing that
    no earlier step of the change makes (on stores whose folders are key prefixes, one marker
    for a folder asked for, none for a file's parents)."""
    key = (target.mount.url, target.rel)
    if key in state.made:
        return []
    missing = absent_folders(vfs, target)  # NOT_A_DIRECTORY where a file stands in the way
    if not target.mount.capabilities.empty_dirs:
        missing = [] if for_a_file else missing[:1]
    chosen = [one for one in reversed(missing) if (one.mount.url, one.rel) not in state.made]
    state.made.update((one.mount.url, one.rel) for one in chosen)
    return chosen


def _parent(vfs: JailedFS, state: Preparation, target: Target) -> None:
    """NOT_FOUND unless ``target``'s parent is a folder, or an earlier step makes it."""
    parent = target.parent()
    if (parent.mount.url, parent.rel) not in state.made:
        parent_is_there(vfs, target)


def _put(vfs: JailedFS, op: Put, state: Preparation) -> Prepared:
    target = op.target
    entry, data = _as_read(vfs, target, op.expect, state)
    if entry is not None and entry.type == "directory":
        raise IsADirectory(f"{target.display} is a directory; give a file path")
    images.check(vfs, target, entry, op.expect)
    if entry is not None:
        _refuse_hard_links(entry)
    made = _missing(vfs, state, target.parent(), for_a_file=True) if entry is None and op.parents else []
    if entry is None and not op.parents:
        _parent(vfs, state, target)
    mode = op.mode if op.mode is not None else entry.mode if entry is not None else None
    image: Image | None = Absent()

    def run() -> str | None:
        make(vfs, made)
        try:
            return _write(vfs, op, entry, mode, state)
        except BaseException:
            unmake(vfs, made)
            raise

    def back(digest: str | None) -> list[Step]:
        after = Expect("file", digest=digest or _digest_of(vfs, op, state))
        if entry is None:
            return [Remove(target, after), *(remove_made(one) for one in reversed(made))]
        return [Restore(target, image or Absent(), after)]

    step = Prepared(op, run, back, atomic=not made)
    if entry is not None:
        kept = data if data is not None else op.expect.content
        hashed = op.expect.content_digest if kept is op.expect.content else None
        image = _replaced(vfs, state, target, entry, kept, step, renamed=True, hashed=hashed)
    return step


def _key(target: Target) -> Key:
    return (target.mount.url, target.rel)


def _digest_of(vfs: JailedFS, op: Put, state: Preparation) -> str:
    """The sha256 of what ``op`` writes, before it is written (a copy's source, read once)."""
    if op.data is not None:
        return op.digest() if op.digest is not None else sha256(op.data)
    assert op.source is not None
    source = _key(op.source)
    if source not in state.read:
        _, data = vfs.read_whole(op.source, CREATE_ONLY_BYTES)
        if data is None:
            return images._digest(vfs, op.source)
        state.read[source] = data
    return sha256(state.read[source])


def _write(vfs: JailedFS, op: Put, entry: Entry | None, mode: int | None, state: Preparation) -> str:
    """Write a Put's bytes (its source's are in ``state.read`` when the change read them already); their sha256."""
    target = op.target
    capabilities = target.mount.capabilities
    if op.source is not None:
        source = op.source
        read = state.read.get(_key(source))
        size = len(read) if read is not None else vfs.info(source).size
        if entry is None and capabilities.conditional_writes and size <= CREATE_ONLY_BYTES:
            # A copy onto a new name lands only while the name is free: one of two copies wins.
            # (CopyObject's If-None-Match would keep the bytes at the store, but not every S3
            # honours it: moto 5.2.5 copies anyway.)
            data = read if read is not None else b"".join(vfs.chunks(source))
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
        data = op.data if isinstance(op.data, bytes) else op.data.joined()  # one request body
        version = store.put_if(vfs, target, data, token=None if entry is None else op.expect.token)
        if version is not None:
            state.versions[_key(target)] = version
    else:
        store.put(vfs, target, op.data, mode=mode)
    return op.digest() if op.digest is not None else sha256(op.data)


def _append(vfs: JailedFS, op: Append, state: Preparation) -> Prepared:
    target = op.target
    entry, data = _as_read(vfs, target, op.expect, state)
    if entry is None:
        raise NotFound(f"{target.display} does not exist; list its folder to check the name")
    images.check(vfs, target, entry, op.expect)
    _refuse_hard_links(entry)
    image: Image | None = None

    def run() -> str | None:
        if target.mount.capabilities.append:
            store.append(vfs, target, op.data)
        else:
            old = image.data if isinstance(image, FileImage) else store.read(vfs, target)
            if target.mount.capabilities.conditional_writes and entry.token is not None:
                store.put_if(vfs, target, old + op.data, token=entry.token)
            else:
                store.put(vfs, target, old + op.data, mode=entry.mode)
        return None

    def back(_: str | None) -> list[Step]:
        if not isinstance(image, FileImage):
            return []
        return [Restore(target, image, Expect("file", digest=sha256(image.data + op.data)))]

    step = Prepared(op, run, back)
    image = _replaced(vfs, state, target, entry, data if data is not None else op.expect.content, step)
    return step


def _remove(vfs: JailedFS, op: Remove, state: Preparation) -> Prepared:
    target = op.target
    if target.is_root:
        raise IsADirectory(f"{target.display} is a mount root and cannot be deleted")
    entry = _present(vfs, target)
    images.check(vfs, target, entry, op.expect)
    inside = entry.type == "directory" and any(True for _ in store.raw_tree(vfs, target))
    if inside and not op.recursive:
        raise AlreadyExists(f"{target.display} is a directory that is not empty; pass recursive=true")
    image: Image | None = None

    def run() -> str | None:
        store.remove(vfs, target, entry, recursive=op.recursive)
        return None

    def back(_: str | None) -> list[Step]:
        return [Restore(target, image or Absent(), ABSENT)]

    step = Prepared(op, run, back, atomic=not inside)
    image = _keep(vfs, state, target, entry, step)
    return step


def _rename(vfs: JailedFS, op: Rename, state: Preparation) -> Prepared:
    source, dest = op.source, op.dest
    entry = _present(vfs, source)
    images.check(vfs, source, entry, op.expect)
    there = store.probe(vfs, dest)
    images.check(vfs, dest, there, op.dest_expect)
    if entry.type == "directory":
        _check_hiding(vfs, source, dest, [rel for rel, _ in store.raw_tree(vfs, source)])
    made = _missing(vfs, state, dest.parent(), for_a_file=True) if there is None and op.parents else []
    if there is None and not op.parents:
        _parent(vfs, state, dest)
    # By content, not times: a later change inside that its own undo put back leaves other times.
    moved = Expect(
        entry.type, fingerprint=images.fingerprint(vfs, source, contents=True) if state.left is not None else None
    )
    replaced: Image | None = None

    def run() -> str | None:
        make(vfs, made)
        try:
            store.rename(vfs, source, dest)
        except BaseException:
            unmake(vfs, made)
            raise
        return None

    def back(_: str | None) -> list[Step]:
        steps: list[Step] = [Rename(dest, source, moved, ABSENT)]
        if replaced is not None:
            steps.append(Restore(dest, replaced, ABSENT))
        return steps + [remove_made(one) for one in reversed(made)]

    step = Prepared(op, run, back, atomic=not made)
    if there is not None:
        replaced = _keep(vfs, state, dest, there, step)
    return step


def _make_dir(vfs: JailedFS, op: MakeDir, state: Preparation) -> Prepared:
    made = _missing(vfs, state, op.target, for_a_file=False)

    def run() -> str | None:
        make(vfs, made)
        return None

    return Prepared(op, run, lambda _: [remove_made(one) for one in reversed(made)], atomic=len(made) <= 1)


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


def _copy_tree(vfs: JailedFS, op: CopyTree, state: Preparation) -> Prepared:
    source, dest = op.source, op.dest
    there = store.probe(vfs, dest)
    if there is not None and (there.type != "directory" or any(True for _ in store.raw_tree(vfs, dest))):
        raise AlreadyExists(f"{dest.display} already exists and is not an empty directory")
    names = op.names
    if names is None:
        listed = [(rel, images.kind_of(raw)) for rel, raw in store.raw_tree(vfs, source)]
        names = tuple((rel, kind) for rel, kind in listed if kind in ("file", "directory"))
    _check_hiding(vfs, source, dest, [rel for rel, _ in names])
    made = _missing(vfs, state, dest, for_a_file=False) if there is None else []
    copied = Expect("directory", fingerprint=images.copied(vfs, source, names) if state.left is not None else None)
    modes = dest.mount.capabilities.modes

    def run() -> str | None:
        make(vfs, made)
        folders: list[tuple[Target, int | None]] = []
        begun: list[tuple[Target, str]] = []
        try:
            for rel, kind in names:
                to = Target(dest.mount, posixpath.join(dest.rel, rel))
                origin = Target(source.mount, posixpath.join(source.rel, rel))
                mode = vfs.info(origin, follow=False).mode if modes else None
                # Noted before the write: one cut short once it reached the store is taken back too.
                begun.append((to, kind))
                if kind == "directory":
                    store.make_dir(vfs, to)
                    folders.append((to, mode))
                else:
                    _write(vfs, Put(to, source=origin), None, mode, state)
            for at, mode in reversed(folders):  # deepest first: a read-only folder is filled before
                if mode is not None:
                    store.chmod(vfs, at, mode)
        except BaseException as err:
            # A create-only put the store refused wrote nothing: what is there is someone else's.
            _remove_copied(vfs, begun[:-1] if isinstance(err, Stale) else begun)
            unmake(vfs, made)
            raise
        return None

    def back(_: str | None) -> list[Step]:
        if made:
            return [Remove(dest, copied, recursive=True), *(remove_made(one) for one in reversed(made[:-1]))]
        return [Remove(dest, copied, recursive=True), Restore(dest, DirImage(there.mode if there else None), ABSENT)]

    return Prepared(op, run, back, atomic=False)


def _remove_copied(vfs: JailedFS, begun: list[tuple[Target, str]]) -> None:
    """What a copy began to write goes, newest first (a folder only while empty): a lookup or
    two for each, however much of the copy was still to come."""
    with commit_scope():
        for at, kind in reversed(begun):
            entry = store.probe(vfs, at)
            if entry is not None and (kind == "file" or not any(True for _ in store.raw_tree(vfs, at))):
                with contextlib.suppress(VfsError):
                    store.remove(vfs, at, entry)


def _restore(vfs: JailedFS, op: Restore, state: Preparation) -> Prepared:
    target = op.target
    entry = store.probe(vfs, target)
    images.check(vfs, target, entry, op.expect)
    replace_file = isinstance(op.image, (FileImage, Stored)) and entry is not None and entry.type == "file"
    if op.image != Absent() and entry is None:
        try:
            _parent(vfs, state, target)
        except NotFound:
            # Where folders are key prefixes, a folder emptied by an earlier step is gone: the
            # restored key makes it again (a file in its way is still NOT_A_DIRECTORY).
            if target.mount.capabilities.empty_dirs:
                raise
    was: Image | None = None

    def run() -> str | None:
        if entry is not None and not replace_file:
            store.remove(vfs, target, entry, recursive=True)
        if not isinstance(op.image, Absent):
            images.restore(vfs, target, op.image)
        return None

    def back(_: str | None) -> list[Step]:
        return [Restore(target, was or Absent(), _after(vfs, target, op.image))]

    step = Prepared(op, run, back, atomic=not isinstance(op.image, DirImage))
    was = _keep(vfs, state, target, entry, step)
    return step


def _after(vfs: JailedFS, target: Target, image: Image) -> Expect:
    """What ``target`` holds once ``image`` is restored there, to check before taking it back."""
    if isinstance(image, FileImage):
        return Expect("file", digest=sha256(image.data))
    if isinstance(image, Stored):
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
