"""What the reference server (``@modelcontextprotocol/server-filesystem``) means by its tools.

The ``official`` profile reuses our operations (jail, limits, atomic writes, backends) and
needs only what is the reference's own on top: its result text (``[FILE]``/``[DIR]`` lines,
sizes as ``1.50 KB``, a JSON tree, a fenced diff with jsdiff's headers), its
``search_files`` globs (minimatch on paths relative to the search root), and its
``edit_file`` matching (exact text, else lines equal once trimmed), made safe: an oldText
found in two places is a CONFLICT instead of "the first one", and CRLF files stay CRLF.

Messages are rewritten where ours would name an argument this profile does not have.
Every function returns text (or a ``Media``) and raises our errors; nothing here is MCP.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import quote

from vfs_mcp.errors import (
    AlreadyExists,
    BinaryContent,
    InvalidArgument,
    NotFound,
    TooLarge,
    VfsError,
)
from vfs_mcp.jail.filesystem import Entry, JailedFS
from vfs_mcp.jail.globs import minimatch
from vfs_mcp.jail.resolve import Target
from vfs_mcp.ops import lines as line_ops
from vfs_mcp.ops import listing, read, transfers, write
from vfs_mcp.ops.levels import breadth_first_cut
from vfs_mcp.ops.names import NAMES_NOTE, escaped, shown
from vfs_mcp.ops.walk import select

MAX_LISTED = 1000
"""Entries one listing, tree or search shows; the rest are counted in a note."""

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


@dataclass
class Reply:
    """A tool's text as the reference writes it, plus a note when a limit cut it short."""

    text: str
    note: str | None = None


def _more(omitted: int, one: str, many: str, hint: str) -> str | None:
    return f"({omitted} more {one if omitted == 1 else many} not shown; {hint})" if omitted else None


def _noted(note: str | None, *names: str) -> str | None:
    """``note``, and the line saying names were quoted when ``shown`` quoted any of ``names``."""
    if not escaped(*names):
        return note
    return NAMES_NOTE if note is None else f"{note}\n{NAMES_NOTE}"


# -- sizes ------------------------------------------------------------------------------


def format_size(size: int) -> str:
    """Bytes as the reference writes them: ``512 B``, ``1.50 KB``, ``1024.00 KB``, up to TB."""
    units = ("B", "KB", "MB", "GB", "TB")
    if size <= 0:
        return f"{size} B"
    power = 0
    while power < len(units) - 1 and size >= 1024 ** (power + 1):
        power += 1
    return f"{size} B" if power == 0 else f"{size / 1024**power:.2f} {units[power]}"


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
        return Media("resource", data, guessed, resource_uri(target))
    return Media("image" if mime.startswith("image/") else "audio", data, mime, resource_uri(target))


def resource_uri(target: Target) -> str:
    """A percent-encoded URI for a path: ``file://`` on local mounts, the mount's URL scheme elsewhere."""
    if target.mount.is_local:
        return PurePosixPath(target.display).as_uri()
    scheme, rest = target.display.split("://", 1)
    return f"{scheme}://{quote(rest, safe='/')}"


# -- writing ----------------------------------------------------------------------------


def _require_parent(vfs: JailedFS, target: Target) -> None:
    if target.is_root:
        return
    parent = target.parent()
    try:
        vfs.require_dir(parent)
    except NotFound:
        raise NotFound(
            f"Parent directory does not exist: {parent.display}; create it with create_directory first"
        ) from None


def write_text(vfs: JailedFS, path: str, content: str, max_bytes: int | None) -> str:
    """Create or replace a file with UTF-8 text (atomically on local disks)."""
    _require_parent(vfs, vfs.resolve(path, write=True))
    try:
        write.write_file(vfs, path, content, "utf-8", max_bytes=max_bytes)
    except TooLarge:
        raise TooLarge(f"content is over the {max_bytes}-byte limit for one write; write a smaller file") from None
    return f"Successfully wrote to {path}"


def create_directory(vfs: JailedFS, path: str) -> str:
    """Create a directory and its parents; an existing directory is a success."""
    write.create_directory(vfs, path, parents=True, exist_ok=True)
    return f"Successfully created directory {path}"


def move(vfs: JailedFS, source: str, destination: str) -> str:
    """Move or rename a file or directory; an existing destination is refused."""
    src = vfs.resolve(source, follow=False, write=True)
    vfs.info(src, follow=False)  # a missing source is the first thing to report
    dst = vfs.resolve(destination, write=True)
    if vfs.exists(dst):
        raise AlreadyExists(f"{destination} already exists; move_file never replaces, so choose another destination")
    _require_parent(vfs, dst)
    transfers.move_file(vfs, source, destination)
    return f"Successfully moved {source} to {destination}"


# -- listing ----------------------------------------------------------------------------


def _tag(entry: Entry) -> str:
    # The reference asks "is it a directory?": links and other kinds are [FILE].
    return "[DIR]" if entry.type == "directory" else "[FILE]"


def list_directory(vfs: JailedFS, path: str, limit: int = MAX_LISTED) -> Reply:
    """``[FILE] name`` / ``[DIR] name`` lines in name order, hidden names included."""
    result = listing.list_directory(vfs, path, include_hidden=True, limit=limit)
    lines = [f"[DIR] {shown(e.name)}" if e.type == "directory" else f"[FILE] {shown(e.name)}" for e in result.entries]
    hint = "use search_files with a pattern to find the others"
    more = _more(result.total - len(lines), "entry", "entries", hint)
    return Reply("\n".join(lines), _noted(more, *(e.name for e in result.entries)))


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


def list_with_sizes(vfs: JailedFS, path: str, sort_by: str = "name", limit: int = MAX_LISTED) -> Reply:
    """Entries with padded names and file sizes, sorted by name or largest first, then totals."""
    if sort_by not in ("name", "size"):
        raise InvalidArgument("sortBy must be 'name' or 'size'")
    entries = sorted(vfs.ls(vfs.resolve(path)), key=_by_name)
    if sort_by == "size":
        entries.sort(key=lambda e: _sort_size(vfs, e), reverse=True)
    lines = [
        f"{_tag(e)} {shown(e.name).ljust(30)} {'' if e.type == 'directory' else format_size(e.size).rjust(10)}"
        for e in entries[:limit]
    ]
    files = [e for e in entries if e.type != "directory"]
    lines += [
        "",
        f"Total: {len(files)} files, {len(entries) - len(files)} directories",
        f"Combined size: {format_size(sum(e.size for e in files))}",
    ]
    hint = "the totals count them; use search_files to find them"
    more = _more(max(0, len(entries) - limit), "entry", "entries", hint)
    return Reply("\n".join(lines), _noted(more, *(e.name for e in entries[:limit])))


def directory_tree(vfs: JailedFS, path: str, exclude_patterns: Sequence[str] = (), limit: int = MAX_LISTED) -> Reply:
    """The tree as a JSON array of ``{name, type, children}`` (children on directories only),
    2-space indented. Exclude patterns are gitignore globs: ``node_modules`` and ``*.log`` at
    any depth, ``src/*.js`` anchored to ``path``.
    """
    root = vfs.resolve(path)
    # The reference walks everything: no ignore files, .git included. Its tree has no cap;
    # ours is cut breadth-first, so a capped tree still shows the top levels whole.
    selection = select(vfs, root, exclude=list(exclude_patterns) or None, respect_gitignore=False)
    relative = [selection.relative(entry) for entry in selection.entries]
    keep, _, _ = breadth_first_cut([rel.count("/") + 1 for rel in relative], limit)
    top: list[dict[str, Any]] = []
    children = {"": top}  # each kept directory's child list, by its path relative to root
    for entry, rel, kept in zip(selection.entries, relative, keep, strict=True):
        if not kept:
            continue
        node: dict[str, Any] = {"name": entry.name, "type": "directory" if entry.type == "directory" else "file"}
        if entry.type == "directory":
            node["children"] = children[rel] = []
        children[rel.rpartition("/")[0]].append(node)
    hint = "pass excludePatterns or a deeper path"
    omitted = len(keep) - sum(keep)
    return Reply(json.dumps(top, indent=2, ensure_ascii=False), _more(omitted, "entry", "entries", hint))


# -- searching --------------------------------------------------------------------------


def search_files(
    vfs: JailedFS, path: str, pattern: str, exclude_patterns: Sequence[str] = (), limit: int = MAX_LISTED
) -> Reply:
    """Full paths of everything under ``path`` whose path relative to it matches ``pattern``.

    Globs are minimatch's with dotfiles included: ``*.txt`` only directly in ``path``,
    ``**/*.txt`` at any depth, ``{a,b}``, ``?``, ``[abc]``; case-sensitive. A directory
    matching an exclude pattern is skipped with everything in it.
    """
    matches = minimatch(pattern)
    excluded = [minimatch(p) for p in exclude_patterns]
    root = vfs.resolve(path)
    selection = select(vfs, root, respect_gitignore=False)
    pruned = None  # the excluded directory being skipped: depth-first order keeps its insides together
    found: list[str] = []
    omitted = 0
    for entry in selection.entries:
        rel = selection.relative(entry)
        if pruned is not None and rel.startswith(pruned):
            continue
        if any(m(rel) for m in excluded):
            pruned = rel + "/"
            continue
        if matches(rel):
            if len(found) < limit:
                found.append(shown(entry.path))
            else:
                omitted += 1
    hint = "narrow the pattern or the path"
    return Reply("\n".join(found) or "No matches found", _noted(_more(omitted, "match", "matches", hint), *found))


# -- metadata ---------------------------------------------------------------------------


def file_info(vfs: JailedFS, path: str) -> str:
    """``key: value`` lines in the reference's order; times in ISO 8601 UTC, where the backend has them."""
    info = listing.get_file_info(vfs, path)
    fields: list[tuple[str, object]] = [
        ("size", info.size),
        ("created", info.created),
        ("modified", info.modified),
        ("accessed", info.accessed),
        ("isDirectory", info.type == "directory"),
        ("isFile", info.type == "file"),
        ("permissions", info.mode[-3:] if info.mode else None),
    ]
    return "\n".join(
        f"{key}: {str(value).lower() if isinstance(value, bool) else value}"
        for key, value in fields
        if value is not None
    )


def allowed_directories(vfs: JailedFS) -> str:
    """``Allowed directories:`` and one mount root per line."""
    roots = [m.root for m in listing.list_allowed_directories(vfs).directories]
    return "Allowed directories:\n" + "\n".join(roots)
