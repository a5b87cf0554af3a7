"""Applying a planned change in two halves per step: ``prepare`` re-checks the step's path
(policy, precondition), keeps what it replaces and says which steps take it back; ``perform``
makes the store calls. A step that fails takes back the ones made before it, newest first.

A change of one atomic step is prepared and made at once; its record, written after, is only
for undo (a crash cannot cut one step in two). A change of several steps (or one that is many
store calls: a folder copied, a tree deleted) is prepared whole first, so that its record —
every step's way back, with the images it needs — is durable in the state store before the
first step is made (``before``); ``after`` marks it made. Undo runs its steps one after the
other (``sequential``): the record it takes back is its own record.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

from vfs_mcp.changes import images, store
from vfs_mcp.changes.folders import absent_folders, make, parent_is_there, remove_made, unmake
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
    Stored,
    image_size,
    trees,
    written,
)
from vfs_mcp.errors import AccessDenied, AlreadyExists, Internal, IsADirectory, NotFound, TooLarge, VfsError
from vfs_mcp.jail.entries import Entry, sha256
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp_backends import commit_scope, ensure_wanted

CREATE_ONLY_BYTES = 64 * 1024 * 1024
"""Largest file a copy onto a new name on an object store sends as one create-only put."""

Key = tuple[str, str]


@dataclass
class Receipt:
    """A committed change: the steps that take it back, in the order to run them (None when
    some of what it replaced was too large to keep: it cannot be undone, ``why_not`` says why)."""

    undo: list[Op] | None
    why_not: str | None = None


@dataclass
class Step:
    """One operation, checked, with what it replaces kept: ``run`` makes it (the digest of a
    file it writes, when it writes one) and ``back`` gives the steps that take it back."""

    op: Op
    run: Callable[[], str | None]
    way_back: Callable[[str | None], list[Op]]
    atomic: bool = True
    """One store call, or none: a crash leaves it made or not, never half."""
    unkept: str | None = None
    """Why what it replaces could not be kept (the change's budget): it cannot be taken back."""
    digest: str | None = None

    def back(self) -> list[Op]:
        return self.way_back(self.digest)

    def perform(self) -> None:
        self.digest = self.run()


@dataclass
class _Plan:
    """What the steps prepared so far will have done, for the ones after them."""

    left: int | None
    """Bytes of before-images the change may still keep (None: keep nothing)."""
    made: set[Key] = field(default_factory=set)
    """Folders an earlier step makes."""
    touched: set[Key] = field(default_factory=set)


class Journal(Protocol):
    """Where a change of several steps is recorded before its first step (``log.ChangeLog``)."""

    def pending(self, back: list[Op], finish: list[Op]) -> None:
        """Record, durably, the steps that take the change back and those that finish it."""

    def abandoned(self) -> None:
        """The change failed and every step made was taken back: it never happened."""


def commit(
    vfs: JailedFS,
    ops: Sequence[Op],
    *,
    keep: int,
    journal: Journal | None = None,
    sequential: bool = False,
) -> tuple[Receipt, bool]:
    """Apply ``ops`` in order, all or none: a failure takes back the applied ones and raises
    (the message says whether every path is as it was). ``keep``: bytes of before-images the
    change may keep; past it a change is still made when nothing after it could fail (its last
    step), but cannot be undone. ``journal``: where the change is recorded before its first
    step when it has several (see the module's docstring). Returns the receipt, and whether
    the change was recorded before it was made."""
    state = _Plan(keep)
    if sequential or (len(ops) == 1 and not _many_calls(ops[0])):
        return _one_by_one(vfs, ops, state), False
    steps: list[Step] = []
    for index, op in enumerate(ops):
        steps.append(prepare(vfs, op, state, last=index == len(ops) - 1))
    unkept = next((step for step in steps if step.unkept), None)
    recorded = journal is not None and not (len(steps) == 1 and steps[0].atomic)
    if recorded and journal is not None:
        kept = steps[:-1] if unkept is not None else steps
        journal.pending(
            [op for step in reversed(kept) for op in step.back()],
            [step.op for step in steps if step.unkept and not step.atomic],
        )
    done = _make(vfs, steps, journal if recorded else None)
    if unkept is not None:
        return Receipt(None, unkept.unkept), recorded
    return Receipt([op for step in reversed(done) for op in step.back()]), recorded


def _one_by_one(vfs: JailedFS, ops: Sequence[Op], state: _Plan) -> Receipt:
    """Prepare and make each step in turn (a step may depend on what the one before did)."""
    done: list[Step] = []
    try:
        for index, op in enumerate(ops):
            step = prepare(vfs, op, state, last=index == len(ops) - 1, sequential=True)
            step.perform()
            done.append(step)
            ensure_wanted()
    except BaseException as err:
        _taken_back(vfs, done, err, None)
    unkept = next((step for step in done if step.unkept), None)
    if unkept is not None:
        return Receipt(None, unkept.unkept)
    return Receipt([op for step in reversed(done) for op in step.back()])


def _make(vfs: JailedFS, steps: list[Step], journal: Journal | None) -> list[Step]:
    done: list[Step] = []
    try:
        for step in steps:
            step.perform()
            done.append(step)
            # A call given up while a step ran (its store request already under way) changes
            # nothing in the end: what it did is taken back like any failure's.
            ensure_wanted()
    except BaseException as err:
        _taken_back(vfs, done, err, journal)
    return done


def _taken_back(vfs: JailedFS, done: list[Step], err: BaseException, journal: Journal | None) -> NoReturn:
    """Take back ``done`` after ``err`` and raise it again, saying whether every path is as it
    was; a journal whose change was taken back whole forgets it."""
    failed = roll_back(vfs, [step.back() for step in done]) if done else []
    if not failed and journal is not None:
        journal.abandoned()
    if done and isinstance(err, VfsError):
        state = (
            "every file is as it was" if not failed else f"{', '.join(failed[:3])} could not be put back; check them"
        )
        raise err.noted(f"nothing was changed ({state})") from err
    raise err


def roll_back(vfs: JailedFS, done: list[list[Op]]) -> list[str]:
    """Run the steps that take back ``done``, newest first; the paths that could not be put back."""
    failed: list[str] = []
    # A rollback runs even for a call given up meanwhile: it only ever puts things back.
    with commit_scope():
        for back in reversed(done):
            for op in back:
                try:
                    prepare(vfs, op, _Plan(None), last=False, sequential=True).perform()
                except Exception:
                    failed.append(written(op)[0].display)
    return failed


def _many_calls(op: Op) -> bool:
    """Whether ``op`` may take many store calls whatever its path holds (a crash can cut it)."""
    return isinstance(op, CopyTree) or (isinstance(op, Remove) and op.recursive)


# -- preparing each kind of step ---------------------------------------------------------------


def prepare(vfs: JailedFS, op: Op, state: _Plan, *, last: bool, sequential: bool = False) -> Step:
    """Check ``op``'s paths (policy, precondition) and keep what it replaces; the step, ready."""
    for target in written(op):
        vfs.jail.check_write(target)
        key = (target.mount.url, target.rel)
        if key in state.touched and not sequential:
            raise Internal(f"one change writes {target.display} twice; plan it as one step")
        state.touched.add(key)
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

    def __init__(self, error: TooLarge, step: Step) -> None:
        super().__init__(str(error))
        self.error, self.step = error, step


def _capture(vfs: JailedFS, state: _Plan, target: Target, entry: Entry | None) -> Image | None:
    """What ``target`` holds, kept within the change's budget; None when nothing is kept."""
    if state.left is None:
        return None
    image = images.capture(vfs, target, entry, state.left)
    state.left -= image_size(image)
    return image


def _keep(vfs: JailedFS, state: _Plan, target: Target, entry: Entry | None, unkept: Step) -> Image | None:
    try:
        return _capture(vfs, state, target, entry)
    except TooLarge as exc:
        unkept.unkept = str(exc)
        raise _Unkept(TooLarge(f"{exc}; the change would not be undoable"), unkept) from None


def _present(vfs: JailedFS, target: Target) -> Entry:
    entry = store.probe(vfs, target)
    if entry is None:
        raise NotFound(f"{target.display} does not exist")
    return entry


def _missing(vfs: JailedFS, state: _Plan, target: Target, *, for_a_file: bool) -> list[Target]:
    """The folders to make, top down, for ``target`` (a folder) to be there: those missing that
    no earlier step of the change makes (on stores whose folders are key prefixes, one marker
    for a folder asked for, none for a file's parents)."""
    key = (target.mount.url, target.rel)
    if key in state.made:
        return []
    missing = absent_folders(vfs, target)
    if not target.mount.capabilities.empty_dirs:
        missing = [] if for_a_file else missing[:1]
    chosen = [one for one in reversed(missing) if (one.mount.url, one.rel) not in state.made]
    state.made.update((one.mount.url, one.rel) for one in chosen)
    return chosen


def _parent(vfs: JailedFS, state: _Plan, target: Target) -> None:
    """NOT_FOUND unless ``target``'s parent is a folder, or an earlier step makes it."""
    parent = target.parent()
    if (parent.mount.url, parent.rel) not in state.made:
        parent_is_there(vfs, target)


def _put(vfs: JailedFS, op: Put, state: _Plan) -> Step:
    target = op.target
    entry = store.probe(vfs, target)
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
            return _write(vfs, op, entry, mode)
        except BaseException:
            unmake(vfs, made)
            raise

    def back(digest: str | None) -> list[Op]:
        after = Expect("file", digest=digest or _digest_of(vfs, op))
        if entry is None:
            return [Remove(target, after), *(remove_made(one) for one in reversed(made))]
        return [Restore(target, image or Absent(), after)]

    step = Step(op, run, back, atomic=not made)
    if entry is not None:
        content = op.expect.content
        if content is not None and state.left is not None:
            image = FileImage(content, entry.mode)
            state.left -= len(content)
        else:
            image = _keep(vfs, state, target, entry, step)
    return step


def _digest_of(vfs: JailedFS, op: Put) -> str:
    """The sha256 of what ``op`` writes, before it is written."""
    if op.data is not None:
        return op.digest() if op.digest is not None else sha256(op.data)
    assert op.source is not None
    return images._digest(vfs, op.source)


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


def _append(vfs: JailedFS, op: Append, state: _Plan) -> Step:
    target = op.target
    entry = _present(vfs, target)
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

    def back(_: str | None) -> list[Op]:
        if not isinstance(image, FileImage):
            return []
        return [Restore(target, image, Expect("file", digest=sha256(image.data + op.data)))]

    step = Step(op, run, back)
    image = _keep(vfs, state, target, entry, step)
    return step


def _remove(vfs: JailedFS, op: Remove, state: _Plan) -> Step:
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

    def back(_: str | None) -> list[Op]:
        return [Restore(target, image or Absent(), ABSENT)]

    step = Step(op, run, back, atomic=not inside)
    image = _keep(vfs, state, target, entry, step)
    return step


def _rename(vfs: JailedFS, op: Rename, state: _Plan) -> Step:
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

    def back(_: str | None) -> list[Op]:
        steps: list[Op] = [Rename(dest, source, moved, ABSENT)]
        if replaced is not None:
            steps.append(Restore(dest, replaced, ABSENT))
        return steps + [remove_made(one) for one in reversed(made)]

    step = Step(op, run, back, atomic=not made)
    if there is not None:
        replaced = _keep(vfs, state, dest, there, step)
    return step


def _make_dir(vfs: JailedFS, op: MakeDir, state: _Plan) -> Step:
    made = _missing(vfs, state, op.target, for_a_file=False)

    def run() -> str | None:
        make(vfs, made)
        return None

    return Step(op, run, lambda _: [remove_made(one) for one in reversed(made)], atomic=len(made) <= 1)


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


def _copy_tree(vfs: JailedFS, op: CopyTree, state: _Plan) -> Step:
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
            for at, mode in reversed(folders):  # deepest first: a read-only folder is filled before
                if mode is not None:
                    store.chmod(vfs, at, mode)
        except BaseException:
            _remove_copied(vfs, dest, names)
            unmake(vfs, made)
            raise
        return None

    def back(_: str | None) -> list[Op]:
        if made:
            return [Remove(dest, copied, recursive=True), *(remove_made(one) for one in reversed(made[:-1]))]
        return [Remove(dest, copied, recursive=True), Restore(dest, DirImage(there.mode if there else None), ABSENT)]

    return Step(op, run, back, atomic=False)


def _remove_copied(vfs: JailedFS, dest: Target, names: Iterable[tuple[str, str]]) -> None:
    """What a copy wrote goes, folders only while empty."""
    with commit_scope():
        for rel, kind in reversed(list(names)):
            at = Target(dest.mount, posixpath.join(dest.rel, rel))
            entry = store.probe(vfs, at)
            if entry is not None and (kind == "file" or not any(True for _ in store.raw_tree(vfs, at))):
                with contextlib.suppress(VfsError):
                    store.remove(vfs, at, entry)


def _restore(vfs: JailedFS, op: Restore, state: _Plan) -> Step:
    target = op.target
    entry = store.probe(vfs, target)
    images.check(vfs, target, entry, op.expect)
    replace_file = isinstance(op.image, (FileImage, Stored)) and entry is not None and entry.type == "file"
    if op.image != Absent() and entry is None:
        _parent(vfs, state, target)
    was: Image | None = None

    def run() -> str | None:
        if entry is not None and not replace_file:
            store.remove(vfs, target, entry, recursive=True)
        if not isinstance(op.image, Absent):
            images.restore(vfs, target, op.image)
        return None

    def back(_: str | None) -> list[Op]:
        return [Restore(target, was or Absent(), _after(vfs, target, op.image))]

    step = Step(op, run, back, atomic=not isinstance(op.image, DirImage))
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
