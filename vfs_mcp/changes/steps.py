"""What a change is made of: its steps, each one file action naming what its path must hold when
the change commits (``Expect``). Plain data: a tool's plan lists them, ``commit`` makes them, and
making one gives the steps that take it back (for a rollback and for undo). The words: a tool
*plans* a change (``Plan``), a plan is a list of *steps* (``Step``), each *prepared*
(``prepared.Prepared``) and then *made*; ``changes.make`` makes a change. An *operation* is a
tool's work (``vfs_mcp/ops/``), never one of these."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import field
from typing import Literal

from vfs_mcp.changes.frozen import frozen
from vfs_mcp.errors import Internal
from vfs_mcp.jail.entries import Pieces
from vfs_mcp.jail.resolve import Target

State = Literal["absent", "file", "directory", "symlink", "other", "file-or-absent", "any"]

Fingerprint = tuple[tuple[str, str, int, float | str | None], ...]
"""A path's raw state, cheap to take: (path below it, type, size, modified) for it and, for a
folder, for everything inside (files the deny list hides included)."""


@frozen
class Expect:
    """What a path must hold when the change commits; otherwise nothing is changed.

    ``token``: the version token read (an ETag), ``content``: the bytes read, ``digest``:
    their sha256, ``fingerprint``: the raw state of a path (a moved folder, an empty one),
    ``points_to``: a link's text; ``identity``: the local file's identity where ``content`` was
    read (``Entry.identity``): while the file's is the same, its bytes are not read again;
    ``content_digest``: ``content``'s sha256, had by calling, when the planner has it hashed
    (``sha256s_aside``: the undo record names it). A
    mismatch makes the change plan again on what is there now; a plan that finds the caller's
    own pin (``expected_hash``) no longer holds says CONFLICT.
    """

    state: State = "any"
    token: str | None = None
    content: bytes | None = None
    digest: str | None = None
    fingerprint: Fingerprint | None = None
    points_to: str | None = None
    identity: tuple[int, ...] | None = None
    content_digest: Callable[[], str] | None = field(default=None, compare=False, repr=False)


ABSENT = Expect("absent")
ANYTHING = Expect("any")


@frozen
class Put:
    """``target`` holds ``data`` (or a copy of ``source``'s bytes), made visible in one step;
    the mode is ``mode``, else the old file's, else the store's default for new files."""

    target: Target
    data: bytes | Pieces | None = None
    """The new content, or its ``Pieces`` (written one after the other, never joined)."""
    source: Target | None = None
    expect: Expect = Expect("file-or-absent")
    mode: int | None = None
    parents: bool = False
    """Make missing parent folders (they are taken back with the file)."""
    digest: Callable[[], str] | None = field(default=None, compare=False)
    """``data``'s sha256, when the caller has it (or has it hashed meanwhile)."""


@frozen
class Append:
    """``data`` added at the end of the file ``target``."""

    target: Target
    data: bytes
    expect: Expect = Expect("file")


@frozen
class Remove:
    """``target`` gone: a file, a link (never what it points to), or a folder (with everything
    in it when ``recursive``)."""

    target: Target
    expect: Expect = ANYTHING
    recursive: bool = False


@frozen
class Rename:
    """``source`` (a file, link or folder, as it is) renamed to ``dest``, in one step."""

    source: Target
    dest: Target
    expect: Expect = ANYTHING
    dest_expect: Expect = ABSENT
    parents: bool = False
    """Make ``dest``'s missing parent folders (they are taken back with the move)."""


@frozen
class MakeDir:
    """The folder ``target`` made, with its missing parents."""

    target: Target


@frozen
class CopyTree:
    """The folder ``source``'s files and folders copied to the new folder ``dest``, modes
    kept where ``dest``'s store has modes; ``names``: what to copy, (path below, type) in
    depth-first order (links and special files are left out by whoever lists them); None:
    everything the store holds there, what the deny list hides included (a move inside one
    mount, on a store that cannot rename)."""

    source: Target
    dest: Target
    names: tuple[tuple[str, str], ...] | None


@frozen
class Restore:
    """``target`` holds again what ``image`` shows it held (an undo's, or a rollback's step)."""

    target: Target
    image: Image
    expect: Expect = ANYTHING


@frozen
class Absent:
    """Nothing was there."""


@frozen
class FileImage:
    """A file's bytes and mode; ``digest``: their sha256, when it is had (or being hashed meanwhile)."""

    data: bytes
    mode: int | None = None
    digest: Callable[[], str] | None = field(default=None, compare=False, repr=False)
    kept: str | None = field(default=None, compare=False)
    """The state store's name that holds these bytes as they are (the replaced file itself,
    ``linked.Links``): a record names it rather than holding a copy."""


@frozen
class Stored:
    """A file's bytes and mode, kept in the state store with its change's record: ``size``
    bytes at ``offset`` of the record, whose sha256 is ``sha256``, fetched (and checked) only
    when restored."""

    fetch: Callable[[int, int], bytes] = field(compare=False, repr=False)
    offset: int
    size: int
    sha256: str
    mode: int | None = None

    def read(self, shown: str = "a file") -> bytes:
        """The bytes kept; ``Unreadable`` when they are gone or not the ones kept."""
        try:
            data = self.fetch(self.offset, self.offset + self.size)
        except OSError as err:
            raise Unreadable(
                f"what {shown} held, kept for undo, cannot be read back ({err.strerror or err}): "
                "this change cannot be undone"
            ) from None
        if len(data) != self.size or hashlib.sha256(data).hexdigest() != self.sha256:
            raise Unreadable(f"what {shown} held, kept for undo, is not what was kept: this change cannot be undone")
        return data


class Unreadable(Internal):
    """A kept before-image that cannot be read back as it was kept: its change cannot be undone."""


@frozen
class LinkImage:
    """A symbolic link, as its text."""

    points_to: str


@frozen
class DirImage:
    """A folder with its mode, and what was inside it: (path below, image), parents first."""

    mode: int | None = None
    inside: tuple[tuple[str, Image], ...] = ()

    @property
    def size(self) -> int:
        return sum(image_size(image) for _, image in self.inside)


Image = Absent | FileImage | Stored | LinkImage | DirImage
Step = Put | Append | Remove | Rename | MakeDir | CopyTree | Restore


def image_size(image: Image) -> int:
    """Bytes an image keeps."""
    if isinstance(image, FileImage):
        return len(image.data)
    return image.size if isinstance(image, (Stored, DirImage)) else 0


def written(op: Step) -> list[Target]:
    """The paths ``op`` changes (whose folders its change locks, whose policy it re-checks)."""
    if isinstance(op, Rename):
        return [op.source, op.dest]
    if isinstance(op, CopyTree):
        return [op.dest]
    return [op.target]


def trees(op: Step) -> list[Target]:
    """The paths ``op`` may change whole trees at (a folder deleted, moved, filled or put back):
    every writer inside must wait for it, so it holds the folder itself too."""
    if isinstance(op, Rename):
        return [op.source, op.dest]
    if isinstance(op, CopyTree):
        return [op.dest]
    if isinstance(op, Remove) and op.recursive:
        return [op.target]
    if isinstance(op, Restore) and isinstance(op.image, (Absent, DirImage)):
        return [op.target]
    return []
