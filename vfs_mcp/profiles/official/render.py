"""What the reference server (``@modelcontextprotocol/server-filesystem``) answers: its text.

The ``official`` profile reuses our operations (jail, limits, atomic writes, backends) and
needs only what is the reference's own on top: its result text (``[FILE]``/``[DIR]`` lines,
sizes as ``1.50 KB``, a JSON tree, a fenced diff with jsdiff's headers), its
``search_files`` globs (minimatch on paths relative to the search root), and its
``edit_file`` matching (exact text, else lines equal once trimmed), made safe: an oldText
found in two places is a CONFLICT instead of "the first one", and CRLF files stay CRLF.

Its reads and writes (limits, messages, media typing) are ``vfs_mcp.ops.dialects.official``'s, its
tree and globbed search ``vfs_mcp.ops.trees.directory_tree``'s. Every function returns text and raises our
errors; nothing here is MCP.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from vfs_mcp.errors import InvalidArgument
from vfs_mcp.jail.entries import Entry
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.files import listing
from vfs_mcp.ops.text.names import NAMES_NOTE, escaped, shown
from vfs_mcp.ops.trees import directory_tree as tree

MAX_LISTED = 1000
"""Entries one listing, tree or search shows; the rest are counted in a note."""


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
    """The tree as a JSON array of ``{name, type, children}`` (``tree.nested_tree``), 2-space indented."""
    top, omitted = tree.nested_tree(vfs, path, exclude_patterns, limit)
    hint = "pass excludePatterns or a deeper path"
    return Reply(json.dumps(top, indent=2, ensure_ascii=False), _more(omitted, "entry", "entries", hint))


# -- searching --------------------------------------------------------------------------


def search_files(
    vfs: JailedFS, path: str, pattern: str, exclude_patterns: Sequence[str] = (), limit: int = MAX_LISTED
) -> Reply:
    """Full paths of everything under ``path`` whose path relative to it matches ``pattern``
    (``tree.glob_search``: minimatch's globs, dotfiles included), one per line."""
    paths, omitted = tree.glob_search(vfs, path, pattern, exclude_patterns, limit)
    found = [shown(p) for p in paths]
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
