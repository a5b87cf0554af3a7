"""The reference server's reads, writes and edits (the ``official`` profile's): our
operations with its limits, its messages and its media typing.

Its edits are matched as the reference matches them: the exact text, else whole lines equal
once trimmed, then ``new`` takes the file's indentation. Made safe: an ``old`` found in two
places is a CONFLICT instead of "the first one"; CRLF files stay CRLF; all edits apply in
order, or none.

Messages are rewritten where ours would name an argument the reference does not have.
Every function returns text (or a ``Media``), or what a listing, tree or search found for the
profile's renderer (``vfs_mcp.profiles.official.render``) to write, and raises our errors.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from vfs_mcp import changes
from vfs_mcp.changes import Plan
from vfs_mcp.errors import BinaryContent, Conflict, InvalidArgument, NotFound, TooLarge, VfsError
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops.edits.indentation import reindent
from vfs_mcp.ops.files import lines as line_ops
from vfs_mcp.ops.files import listing, read, transfers, write
from vfs_mcp.ops.files.write import writable
from vfs_mcp.ops.text.document import TextFile
from vfs_mcp.ops.text.names import uri_of
from vfs_mcp.ops.trees import directory_tree as tree

MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".svg": "image/svg+xml",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
}
"""The extensions the reference returns as image/audio blocks; every other file is a resource."""

MAX_LISTED = 1000
"""Entries one listing, tree or search shows; the rest are counted in a note."""


# -- listing ----------------------------------------------------------------------------


def list_directory(vfs: JailedFS, path: str, limit: int = MAX_LISTED) -> listing.ListResult:
    """A directory's entries in name order, hidden names included (at most ``limit``)."""
    return listing.list_directory(vfs, path, include_hidden=True, limit=limit)


def _by_name(entry: Entry) -> tuple[str, str]:
    # Close to the reference's localeCompare: case-insensitive, lower case first on ties.
    return entry.name.casefold(), entry.name.swapcase()


def _sort_size(vfs: JailedFS, entry: Entry) -> int:
    """The size the reference sorts by: a file's, or a directory's own (its inode's size,
    4096 on most Linux file systems, where a store has host paths; 0 elsewhere)."""
    if entry.type != "directory":
        return entry.size
    real = vfs.host_path(entry.target)
    return os.stat(real).st_size if real else 0


def list_with_sizes(vfs: JailedFS, path: str, sort_by: str = "name") -> list[Entry]:
    """A directory's entries sorted by name, or by size largest first, as the reference sorts them."""
    if sort_by not in ("name", "size"):
        raise InvalidArgument("sortBy must be 'name' or 'size'")
    entries = sorted(vfs.ls(vfs.resolve(path)), key=_by_name)
    if sort_by == "size":
        entries.sort(key=lambda e: _sort_size(vfs, e), reverse=True)
    return entries


def directory_tree(
    vfs: JailedFS, path: str, exclude_patterns: Sequence[str] = (), limit: int = MAX_LISTED
) -> tuple[list[dict[str, Any]], int]:
    """The tree under ``path`` as nested ``{name, type, children}`` nodes, and how many the limit left out."""
    return tree.nested_tree(vfs, path, exclude_patterns, limit)


def search_files(
    vfs: JailedFS, path: str, pattern: str, exclude_patterns: Sequence[str] = (), limit: int = MAX_LISTED
) -> tuple[list[str], int]:
    """Full paths of everything under ``path`` whose path relative to it matches ``pattern``
    (``tree.glob_search``: minimatch's globs, dotfiles included), and how many more matched."""
    return tree.glob_search(vfs, path, pattern, exclude_patterns, limit)


# -- reading ----------------------------------------------------------------------------


def read_text(vfs: JailedFS, path: str, head: int | None, tail: int | None, max_bytes: int) -> str:
    """The whole file as UTF-8 text, or its first ``head`` / last ``tail`` lines joined by
    ``\n`` (no final newline, CRLF read as LF). 0 means "not given", as in the reference.
    """
    if (head is not None and head < 0) or (tail is not None and tail < 0):
        raise InvalidArgument("head and tail must be 0 or more")
    if head and tail:
        raise InvalidArgument("Cannot specify both head and tail parameters simultaneously; pass one of them")
    try:
        if tail:
            text, _ = line_ops.tail_file(vfs, path, tail, "utf-8", max_bytes)
            return _joined(text)
        if head:
            text, meta = line_ops.head_file(vfs, path, head, "utf-8", max_bytes)
            if meta.truncated:
                raise TooLarge(f"the first {head} lines of {path} are over {max_bytes} bytes; ask for fewer lines")
            return _joined(text)
        text, _ = read.read_file(vfs, path, "utf-8", max_read_bytes=max_bytes)
        return text
    except BinaryContent:
        raise BinaryContent(f"{path} is not UTF-8 text; use read_media_file for binary files") from None
    except TooLarge as err:
        if head or tail:
            raise
        raise TooLarge(
            f"{path} is over the {max_bytes}-byte limit for whole reads; read part of it with head or tail"
        ) from err


def _joined(lines: str) -> str:
    text = lines.replace("\r\n", "\n")
    return text[:-1] if text.endswith("\n") else text


def read_many(vfs: JailedFS, paths: Sequence[str], max_bytes: int) -> str:
    """Each file as ``path:\\ncontent\\n`` or ``path: Error - CODE: message``, joined by ``---`` lines.

    All of them together are bounded by ``max_bytes`` (see ``read.admit``).
    """
    if not paths:
        raise InvalidArgument("paths is empty; give at least one path")

    def one(path: str, found: tuple[Target, Entry] | VfsError) -> str:
        try:
            if isinstance(found, VfsError):
                raise found
            return f"{path}:\n{read_text(vfs, path, None, None, min(max_bytes, found[1].size))}\n"
        except VfsError as err:
            return f"{path}: Error - {err}"

    admitted = read.admit(vfs, list(paths), max_bytes)
    return "\n---\n".join(read.each_file(vfs, one, paths, admitted))


@dataclass
class Media:
    """A file as one content block: ``image``/``audio`` data, or a ``resource`` blob with its URI."""

    kind: Literal["image", "audio", "resource"]
    data: str
    mime_type: str
    uri: str


def read_media(vfs: JailedFS, path: str, max_bytes: int) -> Media:
    """A file base64-encoded, typed by its extension as the reference types it."""
    target = vfs.resolve(path)
    entry = vfs.require_file(target)
    if entry.size > max_bytes:
        raise TooLarge(f"{path} is {entry.size} bytes, over the {max_bytes}-byte limit for one read")
    data = base64.b64encode(vfs.cat(target)).decode("ascii")
    extension = posixpath.splitext(target.rel)[1].lower()
    mime = MEDIA_TYPES.get(extension)
    if mime is None:
        guessed = mimetypes.guess_type(target.rel)[0] or "application/octet-stream"
        return Media("resource", data, guessed, uri_of(target, escape_remote=True))
    return Media("image" if mime.startswith("image/") else "audio", data, mime, uri_of(target, escape_remote=True))


# -- writing ----------------------------------------------------------------------------


PARENT_MISSING = "Parent directory does not exist: {parent}; create it with create_directory first"
MOVE = {
    "exists": "{path} already exists; move_file never replaces, so choose another destination",
    "parent_missing": PARENT_MISSING,
}
"""The reference's words for the operations' refusals (``write.Wording``)."""


def write_text(vfs: JailedFS, path: str, content: str, max_bytes: int | None) -> str:
    """Create or replace a file with UTF-8 text (atomically on local disks)."""
    try:
        write.write_file(vfs, path, content, "utf-8", max_bytes=max_bytes)
    except TooLarge:
        raise TooLarge(f"content is over the {max_bytes}-byte limit for one write; write a smaller file") from None
    except NotFound:  # the file itself is not asked to exist: its folder is missing
        raise NotFound(PARENT_MISSING.format(parent=vfs.resolve(path, write=True).parent().display)) from None
    return f"Successfully wrote to {path}"


def create_directory(vfs: JailedFS, path: str) -> str:
    """Create a directory and its parents; an existing directory is a success."""
    write.create_directory(vfs, path, parents=True, exist_ok=True)
    return f"Successfully created directory {path}"


def move(vfs: JailedFS, source: str, destination: str) -> str:
    """Move or rename a file or directory; an existing destination is refused."""
    transfers.move_file(vfs, source, destination, wording=MOVE)
    return f"Successfully moved {source} to {destination}"


# -- editing ----------------------------------------------------------------------------


def edit_trimmed(
    vfs: JailedFS, path: str, edits: Sequence[tuple[str, str]], dry_run: bool, max_bytes: int
) -> tuple[str, str, str]:
    """Apply every (old, new) edit in order, or none; returns the text before, after, and the
    file's name as results write it."""
    if not edits:
        raise InvalidArgument("edits is empty; give at least one {oldText, newText}")
    target = vfs.resolve(path) if dry_run else writable(vfs, path)

    def plan() -> Plan[tuple[str, str, str]]:
        try:
            doc = TextFile.load(vfs, target, "utf-8", max_bytes)
        except BinaryContent:
            raise BinaryContent(f"{path} is not UTF-8 text; edit_file edits text files only") from None
        text = doc.text
        for number, (old, new) in enumerate(edits):
            text = apply_edit(text, number, _lf(old), _lf(new))
        ops = doc.saved(text) if not dry_run and text != doc.text else []
        return Plan((doc.text, text, target.display), ops)

    return changes.make(vfs, plan, touches=[target], dry_run=dry_run)


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def apply_edit(text: str, number: int, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new``: exactly, else as whole lines equal once trimmed
    (``new`` then takes the file's indentation). CONFLICT when ``old`` is in no place or in several.
    """
    if not old:
        raise InvalidArgument(f"edit {number}: oldText is empty; give the text to replace")
    first = text.find(old)
    if first >= 0:
        second = text.find(old, first + 1)
        if second >= 0:
            raise Conflict(
                f"edit {number}: oldText occurs more than once (lines {_line_of(text, first)} and "
                f"{_line_of(text, second)}); add surrounding lines to make it unique"
            )
        return text[:first] + new + text[first + len(old) :]
    wanted = [line.strip() for line in old.split("\n")]
    lines = text.split("\n")
    hits = [
        i
        for i in range(len(lines) - len(wanted) + 1)
        if lines[i].strip() == wanted[0] and all(lines[i + j].strip() == w for j, w in enumerate(wanted))
    ]
    if len(hits) > 1:
        raise Conflict(
            f"edit {number}: oldText matches lines {hits[0] + 1} and {hits[1] + 1} once trimmed; "
            "add surrounding lines to make it unique"
        )
    if not hits:
        raise Conflict(
            f"edit {number}: Could not find exact match for edit, not even with the lines trimmed; "
            "re-read the file and copy oldText from it"
        )
    start = hits[0]
    window = lines[start : start + len(wanted)]
    lines[start : start + len(wanted)] = reindent(new.split("\n"), old.split("\n"), window, as_reference=True)
    return "\n".join(lines)
