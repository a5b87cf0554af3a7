"""What a path held, kept so a change can be taken back: ``capture`` before a step changes
it, ``fingerprint`` (cheap) and ``check`` of what it holds against an ``Expect``, and
``restore`` of an image. Raw, as the store has it: files the deny list hides are kept too,
links as links, empty folders as folders, modes with them."""

from __future__ import annotations

import hashlib
import posixpath
from typing import Any

from vfs_mcp.changes import store
from vfs_mcp.changes.steps import Absent, DirImage, Expect, FileImage, Fingerprint, Image, LinkImage, Stored
from vfs_mcp.errors import Stale, TooLarge
from vfs_mcp.jail.entries import KINDS, Entry, timestamp
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target

MAX_FINGERPRINT = 100_000
"""Entries of a folder whose state a change keeps to check later (a moved folder, for undo)."""
CONTENT_BUDGET = 32 * 1024 * 1024
"""Bytes of a moved file or folder hashed to check later that its content is the same (past them, times)."""


def capture(vfs: JailedFS, target: Target, entry: Entry | None, budget: int) -> Image:
    """What ``target`` (``entry``: what is there, or None) holds; TOO_LARGE past ``budget`` bytes."""
    if entry is None:
        return Absent()
    if entry.type == "symlink":
        return LinkImage(store.readlink(vfs, target))
    if entry.type == "file":
        if entry.size > budget:
            raise TooLarge(f"{target.display} is {entry.size:,} bytes, more than this change can keep to take it back")
        return FileImage(store.read(vfs, target), entry.mode)
    if entry.type != "directory":
        raise TooLarge(f"{target.display} is a FIFO, socket or device: a change cannot keep it to take it back")
    inside: list[tuple[str, Image]] = []
    left = budget
    for rel, raw in store.raw_tree(vfs, target):
        inner = vfs._entry(Target(target.mount, posixpath.join(target.rel, rel)), raw)
        # One walk lists the whole tree: a folder inside is kept as itself, its content as the walk's.
        image = DirImage(inner.mode) if inner.type == "directory" else capture(vfs, inner.target, inner, left)
        left -= len(image.data) if isinstance(image, FileImage) else 0
        inside.append((rel, image))
    return DirImage(entry.mode, tuple(inside))


def fingerprint(
    vfs: JailedFS, target: Target, *, times: bool = True, contents: bool = False, hashes: bool = False
) -> Fingerprint:
    """The raw state of ``target`` and, for a folder, of everything in it: names, kinds, sizes and,
    for a file, its time (``times``) or what says its content (``contents``: the store's ETag,
    else its sha256 while ``CONTENT_BUDGET`` lasts, else its time; ``hashes``: its sha256 while
    the budget lasts, else nothing — what a copy's is known to be before the copy is made)."""
    entry = store.probe(vfs, target)
    if entry is None:
        return ()
    left = CONTENT_BUDGET

    def version(rel: str, kind: str, size: int, etag: Any, modified: float | None) -> float | str | None:
        nonlocal left
        if kind != "file" or not (times or contents or hashes):
            return None
        if contents and etag and not hashes:
            return f"etag:{str(etag).strip(chr(34))}"
        if (contents or hashes) and size <= left:
            left -= size
            inner = Target(target.mount, posixpath.join(target.rel, rel)) if rel else target
            digest = _digest(vfs, inner)
            return f"sha256:{digest}" if hashes else digest
        return None if hashes else modified

    # A folder's own size and time change with what is in it, which is listed: they are not compared.
    size = entry.size if entry.type == "file" else 0
    state: list[tuple[str, str, int, float | str | None]] = [
        ("", entry.type, size, version("", entry.type, size, entry.etag, entry.modified))
    ]
    if entry.type == "directory":
        for count, (rel, raw) in enumerate(store.raw_tree(vfs, target)):
            if count >= MAX_FINGERPRINT:
                raise TooLarge(f"{target.display} holds over {MAX_FINGERPRINT:,} entries: too many to check later")
            kind = kind_of(raw)
            size = int(raw.get("size") or 0) if kind == "file" else 0
            modified = timestamp(raw.get("LastModified") or raw.get("mtime"))
            state.append((rel, kind, size, version(rel, kind, size, raw.get("ETag"), modified)))
    return tuple(state)


def copied(vfs: JailedFS, source: Target, names: tuple[tuple[str, str], ...]) -> Fingerprint:
    """The fingerprint (``hashes``) a new folder will have once ``names`` of ``source`` are
    copied into it, taken before the copy (for the record written before a change starts)."""
    left = CONTENT_BUDGET
    state: list[tuple[str, str, int, float | str | None]] = [("", "directory", 0, None)]
    for rel, kind in sorted(names, key=lambda item: item[0].replace("/", "\x00")):
        if kind != "file":
            state.append((rel, kind, 0, None))
            continue
        inner = Target(source.mount, posixpath.join(source.rel, rel))
        size = vfs.info(inner, follow=False).size
        version: str | None = None
        if size <= left:
            left -= size
            version = f"sha256:{_digest(vfs, inner)}"
        state.append((rel, kind, size, version))
    return tuple(state)


def kind_of(raw: dict[str, Any]) -> str:
    """The kind of an entry, from its store metadata."""
    return KINDS.get(str(raw.get("type")), "file")


def _differs(before: Fingerprint, now: Fingerprint) -> str:
    """The first path below a folder whose state is not the one kept, as a model reads it."""
    old, new = {item[0]: item for item in before}, {item[0]: item for item in now}
    for rel in sorted(set(old) | set(new)):
        if not rel:
            continue
        if rel not in old:
            return f"{rel} was added in it"
        if rel not in new:
            return f"{rel} was removed from it"
        if old[rel] != new[rel]:
            return f"{rel} in it was changed"
    return "its size or time differs"


class Changed(Stale):
    """A path is not what a change was planned on (or, for undo, what a change left)."""

    def __init__(self, path: str, how: str) -> None:
        super().__init__(f"{path} changed since it was read ({how}); read it again")
        self.path, self.how = path, how


def check(vfs: JailedFS, target: Target, entry: Entry | None, expect: Expect) -> None:
    """``Changed`` (saying how) unless ``target`` (``entry``: what is there) holds what ``expect`` says."""
    shown = target.display
    state = expect.state
    kind = entry.type if entry is not None else "absent"
    if state == "file-or-absent":
        if kind not in ("file", "absent"):
            raise Changed(shown, f"it is now a {kind}")
    elif state not in ("any", kind):
        raise Changed(shown, f"it is now {_article(kind)}, not {_article(state)}")
    if entry is None:
        return
    versioned = expect.token is not None and entry.token is not None
    if versioned and entry.token != expect.token:
        raise Changed(shown, "its version differs")
    # The same version token is the same content, and so is a local file's same identity (no
    # write since the read): the bytes are compared only where neither tells.
    same = versioned or (expect.identity is not None and entry.identity == expect.identity)
    if (
        expect.content is not None
        and not same
        and (entry.size != len(expect.content) or not store.holds(vfs, target, expect.content))
    ):
        raise Changed(shown, "its content differs")
    if expect.digest is not None and _digest(vfs, target) != expect.digest.lower():
        raise Changed(shown, "its sha256 differs")
    if expect.points_to is not None and store.readlink(vfs, target) != expect.points_to:
        raise Changed(shown, "the link points elsewhere")
    if expect.fingerprint is not None:
        # Taken with times, contents or hashes (a file's kept version says which): compared the same way.
        versions = [item[3] for item in expect.fingerprint]
        hashes = any(isinstance(v, str) and v.startswith("sha256:") for v in versions)
        contents = not hashes and any(isinstance(v, str) for v in versions)
        timed = any(isinstance(v, float) for v in versions)
        now = fingerprint(vfs, target, times=timed and not contents, contents=contents, hashes=hashes)
        if now != expect.fingerprint:
            raise Changed(shown, _differs(expect.fingerprint, now))


def _article(state: str) -> str:
    return "absent" if state == "absent" else f"a {state}"


def _digest(vfs: JailedFS, target: Target) -> str:
    digest = hashlib.sha256()
    for chunk in vfs.chunks(target):
        digest.update(chunk)
    return digest.hexdigest()


def restore(vfs: JailedFS, target: Target, image: Image, *, missing: bool = False) -> None:
    """Make ``target`` (absent now, or a file for a file image) hold ``image``; ``missing``: put
    back only what of a folder's image the folder ``target`` lacks (a restore, or a delete, cut
    short)."""
    if isinstance(image, FileImage):
        store.put(vfs, target, image.data, mode=image.mode)
    elif isinstance(image, Stored):
        store.put(vfs, target, image.read(target.display), mode=image.mode)
    elif isinstance(image, LinkImage):
        store.symlink(vfs, target, image.points_to)
    elif isinstance(image, DirImage):
        there = {rel for rel, _ in store.raw_tree(vfs, target)} if missing else set()
        # Read back from the state store before the first file is made: one that cannot be changes nothing.
        inside = [
            _loaded(Target(target.mount, posixpath.join(target.rel, rel)), inner)
            for rel, inner in image.inside
            if rel not in there
        ]
        if not missing:
            store.make_dir(vfs, target)
        folders = [(target, image.mode)]
        for at, inner in inside:
            if isinstance(inner, DirImage):
                store.make_dir(vfs, at)
                folders.append((at, inner.mode))
            else:
                restore(vfs, at, inner)
        if target.mount.capabilities.modes:
            for folder, mode in reversed(folders):  # deepest first: a read-only folder is filled before
                if mode is not None:
                    store.chmod(vfs, folder, mode)


def _loaded(target: Target, image: Image) -> tuple[Target, Image]:
    """``target`` and ``image``, its bytes in memory when they are kept in the state store."""
    return target, FileImage(image.read(target.display), image.mode) if isinstance(image, Stored) else image
