"""Asking a person before a change destroys (``--confirm``): which planned changes ask, what
the question says, and the one seam through which the server asks (no MCP here).

The server puts a ``Confirming`` in the context of a call whose client can show a form
(``CallContext.confirming``); the write path (``changes.make``) reads it from the ``vfs`` it is
given and asks it of each plan it made under its locks. A plan that
asks (``question``) is taken on only once a person accepted the very question it gives: the
``Question.key`` is a digest of the plan's steps, of what they expect to find and of the current
state of every path they remove or replace, so a file that changed between the question and the
answer gives another key, and the call is CONFLICT, never a stale plan carried out.

    policy        asks for
    never         nothing (the default for a client that cannot show a form)
    destructive   a recursive delete of a folder that holds files; a move or copy onto an
                  existing file or folder; a whole-file write over a file this session has
                  not read in its current version (an edit or a patch, matched against the
                  file as it is, does not ask); an undo or any change that removes or
                  replaces more than ``MANY`` files (a restore point, a review applied)
    writes        every change

A change that only writes to mounts under review asks nothing: it stays pending until a person
applies it, and applying it (``review_ready`` with ``apply``) asks like any other change.
"""

from __future__ import annotations

import hashlib
import heapq
import posixpath
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from vfs_mcp.changes import images, store
from vfs_mcp.changes.frozen import frozen
from vfs_mcp.changes.steps import (
    Absent,
    Append,
    CopyTree,
    DirImage,
    Expect,
    FileImage,
    Fingerprint,
    Image,
    LinkImage,
    Put,
    Remove,
    Rename,
    Restore,
    Step,
    Stored,
    written,
)
from vfs_mcp.config import DEFAULT_UNDO_BYTES
from vfs_mcp.errors import Conflict
from vfs_mcp.jail.entries import sha256, timestamp
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target

Policy = Literal["never", "destructive", "writes"]
POLICIES: tuple[Policy, ...] = ("never", "destructive", "writes")

MANY = 10
"""Files removed or replaced (or changes taken back) past which any change asks."""

SHOWN = 5
"""Paths a question names (the largest first); the rest are counted."""


@frozen
class Question:
    """What a change will do, in numbers a person can judge, and the key of the plan it describes."""

    action: str
    """One line: "delete the folder memory://w/build", "replace 3 files", ..."""
    files: int
    """Files removed or replaced."""
    size: int
    """Their bytes."""
    paths: tuple[str, ...]
    """The first paths (the largest first), at most ``SHOWN``."""
    undoable: bool
    """Whether ``undo`` can take it back (what it removes fits the change log's before-images)."""
    key: str
    """A digest of the plan: its steps, what they expect and the state of what they replace."""

    def message(self) -> str:
        """The question as a person reads it in the client's dialog."""
        more = self.files - len(self.paths)
        paths = "\n".join(f"  {path}" for path in self.paths) + (f"\n  ... and {more:,} more" if more > 0 else "")
        undo = "undo can take it back" if self.undoable else "undo can NOT take it back"
        return (
            f"An agent asks to {self.action}: {self.files:,} file(s), {_bytes(self.size)} removed or replaced; "
            f"{undo}.\n{paths}\nAllow it?"
        ).replace("\n\n", "\n")


class Asker(Protocol):
    """How the server asks the person (implemented in ``vfs_mcp.server.calls.confirmed``)."""

    def ask(self, question: Question) -> None:
        """Return once the person accepted ``question``; raise ``Declined`` when they did not,
        or the server's own signal when the answer comes in another request (2026-07-28)."""


@dataclass
class Confirming:
    """One call's confirmation: the policy, who asks, and what this session has seen of its files."""

    policy: Policy
    asker: Asker
    seen: MutableMapping[str, str] = field(default_factory=dict)
    """Path -> the sha256 of the content this session last read whole or wrote: a whole-file
    write over a file that still holds it asks nothing."""
    accepted: set[str] = field(default_factory=set)
    """Keys of the questions a person accepted during this call."""

    def question(self, vfs: JailedFS, ops: Sequence[Step], undoing: int) -> Question | None:
        """The question ``ops`` give under the policy; None when they need no person's word."""
        if self.policy == "never" or not ops:
            return None
        if all(target.mount.layer is not None for op in ops for target in written(op)):
            return None  # pending on mounts under review: a person applies them (and is asked then)
        tally = _Tally(vfs, self.seen.get)
        for op in ops:
            tally.add(op)
        many = tally.files > MANY or undoing > MANY
        if self.policy == "destructive" and not (tally.destroys or many):
            return None
        action = tally.action(ops, undoing)
        return Question(
            action=action,
            files=tally.files,
            size=tally.size,
            paths=tuple(path for _, path in sorted(tally.paths, key=lambda item: (-item[0], item[1]))),
            undoable=not undoing and tally.size <= _kept(vfs),
            key=tally.key(),
        )

    def ask(self, question: Question) -> None:
        """Ask the person (the caller holds no lock); returns once they accepted."""
        self.asker.ask(question)
        self.accepted.add(question.key)


def changed_since(question: Question) -> Conflict:
    """The error of a plan that is not the one the person accepted: a file changed meanwhile."""
    return Conflict(
        f"what the person was asked about ({question.action}) changed before the answer came; nothing was "
        "changed: call again to ask anew"
    )


class _Tally:
    """What a plan removes or replaces, counted, and the digest of it all."""

    def __init__(self, vfs: JailedFS, known: Callable[[str], str | None]) -> None:
        self.vfs, self.known = vfs, known
        self.files = 0
        self.size = 0
        self.paths: list[tuple[int, str]] = []
        """The largest files removed or replaced (a heap of at most ``SHOWN``)."""
        self.destroys = False
        self.digest = hashlib.sha256()

    def add(self, op: Step) -> None:
        self._feed(type(op).__name__, *(t.display for t in _targets(op)), *_expects(op))
        if isinstance(op, Remove):
            self._lost(op.target, tree=op.recursive, destroys=op.recursive)
        elif isinstance(op, Rename) and op.dest_expect.state != "absent":
            self._lost(op.dest, tree=True, destroys=True)
        elif isinstance(op, Put):
            self._feed(_data_key(op))
            if op.expect.state in ("file", "file-or-absent", "any") and op.expect.content is None:
                self._put_over(op)
        elif isinstance(op, Append):
            self._feed(hashlib.sha256(op.data).hexdigest())
        elif isinstance(op, Restore):
            self._feed(_image_key(op.image))
            self._lost(op.target, tree=False, destroys=False)
        elif isinstance(op, CopyTree):
            self._feed(repr(op.names))

    def _put_over(self, op: Put) -> None:
        """A whole-file write: destroys unless the caller pinned the version it read, or this
        session read (or wrote) the file as it is now."""
        state = self._state(op.target)
        if not state or state[0][1] != "file":
            return
        self._count(op.target, state)
        if op.source is not None:  # a file copied over it
            self.destroys = True
            return
        if op.expect.digest is not None:
            return
        seen = self.known(op.target.display)
        if seen is None or not self._holds(op.target, state[0][3], seen):
            self.destroys = True

    def _holds(self, target: Target, now: object, seen: str) -> bool:
        """Whether the file (its content's version ``now``, as ``images.fingerprint`` names it)
        holds what the session saw (the sha256 ``seen``): read again where the store names
        versions by ETag."""
        if isinstance(now, str) and now.startswith("etag:"):
            return self.vfs.digest(target) == seen
        return now == seen

    def _lost(self, target: Target, *, tree: bool, destroys: bool) -> None:
        entry = self.vfs.lookup(target)
        if tree and entry is not None and entry.type == "directory":
            files = self._tree(target)
        else:
            files = self._count(target, self._state(target))
        if destroys and files:
            self.destroys = True

    def _tree(self, target: Target) -> int:
        """Count and digest everything in the folder ``target`` (names, kinds, sizes, times,
        ETags) in one walk, keeping only the largest paths: any number of entries."""
        self._feed(target.display, "directory")
        files = 0
        for rel, raw in store.raw_tree(self.vfs, target):
            kind = images.kind_of(raw)
            size = int(raw.get("size") or 0) if kind == "file" else 0
            modified = timestamp(raw.get("LastModified") or raw.get("mtime"))
            self._feed(rel, kind, str(size), repr(modified), str(raw.get("ETag") or ""))
            if kind == "file":
                files += 1
                self._file(size, posixpath.join(target.display, rel))
        return files

    def _state(self, target: Target) -> Fingerprint:
        """One path's state (a file's content version: its ETag or sha256), digested."""
        entry = self.vfs.lookup(target)
        if entry is None:
            state: Fingerprint = ()
        elif entry.type == "file":
            state = images.fingerprint(self.vfs, target, contents=True)
        else:
            state = (("", entry.type, 0, None),)
        self._feed(target.display, repr(state))
        return state

    def _count(self, target: Target, state: Fingerprint) -> int:
        files = 0
        for rel, kind, size, _version in state:
            if kind == "file":
                files += 1
                self._file(size, posixpath.join(target.display, rel) if rel else target.display)
        return files

    def _file(self, size: int, shown: str) -> None:
        """A file removed or replaced: counted, and kept among the largest ``SHOWN``."""
        self.files += 1
        self.size += size
        if len(self.paths) < SHOWN:
            heapq.heappush(self.paths, (size, shown))
        else:
            heapq.heappushpop(self.paths, (size, shown))

    def _feed(self, *parts: str) -> None:
        for part in parts:
            self.digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")

    def key(self) -> str:
        return self.digest.hexdigest()

    def action(self, ops: Sequence[Step], undoing: int) -> str:
        if undoing:
            return f"undo {undoing:,} change(s)"
        first = ops[0]
        if len(ops) == 1 and isinstance(first, Remove):
            kind = "folder" if first.recursive else "path"
            return f"delete the {kind} {first.target.display}"
        renames = [op for op in ops if isinstance(op, Rename)]
        if len(renames) == 1 and len(ops) == 1:
            return f"move {renames[0].source.display} onto the existing {renames[0].dest.display}"
        copies = [op for op in ops if isinstance(op, CopyTree)]
        if copies:
            return f"copy {copies[0].source.display} over {copies[0].dest.display}"
        puts = [op for op in ops if isinstance(op, Put)]
        if len(puts) == 1 and len(ops) == 1:
            return f"write over {puts[0].target.display}"
        return f"make a change of {len(ops):,} step(s)"


def _kept(vfs: JailedFS) -> int:
    """Bytes of before-images a change of the call ``vfs`` is the view of keeps: a change that
    removes or replaces more cannot be undone."""
    recording = vfs.context.recording
    return recording.limit if recording is not None else DEFAULT_UNDO_BYTES


def _targets(op: Step) -> list[Target]:
    if isinstance(op, Rename | CopyTree):
        return [op.source, op.dest]
    if isinstance(op, Put) and op.source is not None:
        return [op.target, op.source]
    return [op.target]


def _expects(op: Step) -> list[str]:
    expects: list[Expect] = []
    if isinstance(op, Put | Append | Remove | Restore):
        expects.append(op.expect)
    if isinstance(op, Rename):
        expects += [op.expect, op.dest_expect]
    return [_expect_key(expect) for expect in expects]


def _expect_key(expect: Expect) -> str:
    content = hashlib.sha256(expect.content).hexdigest() if expect.content is not None else None
    return repr((expect.state, expect.token, content, expect.digest, expect.fingerprint, expect.points_to))


def _data_key(op: Put) -> str:
    if op.data is not None:
        return op.digest() if op.digest is not None else sha256(op.data)
    return f"copy of {op.source.display if op.source else ''}"


def _image_key(image: Image) -> str:
    if isinstance(image, FileImage):
        return f"file {hashlib.sha256(image.data).hexdigest()} {image.mode}"
    if isinstance(image, Stored):
        return f"stored {image.sha256} {image.mode}"
    if isinstance(image, LinkImage):
        return f"link {image.points_to}"
    if isinstance(image, DirImage):
        return f"dir {image.mode} " + ";".join(f"{rel}={_image_key(inner)}" for rel, inner in image.inside)
    assert isinstance(image, Absent)
    return "absent"


def _bytes(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:,} bytes"


__all__ = ["MANY", "POLICIES", "Asker", "Confirming", "Policy", "Question", "changed_since"]
