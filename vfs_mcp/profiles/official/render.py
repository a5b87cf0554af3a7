"""What the reference server (``@modelcontextprotocol/server-filesystem``) answers: its text.

The ``official`` profile reuses our operations (jail, limits, atomic writes, backends) and
needs only what is the reference's own on top: its result text (``[FILE]``/``[DIR]`` lines,
sizes as ``1.50 KB``, a JSON tree, a fenced diff with jsdiff's headers), its
``search_files`` globs (minimatch on paths relative to the search root), and its
``edit_file`` matching (exact text, else lines equal once trimmed), made safe: an oldText
found in two places is a CONFLICT instead of "the first one", and CRLF files stay CRLF.

Each function here writes the text of what an operation gathered
(``vfs_mcp.ops.dialects.official``: its listings, tree and globbed search, reads, writes and
edits); nothing here reads a file, and nothing is MCP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vfs_mcp.jail.entries import Entry
from vfs_mcp.ops.dialects.official import MAX_LISTED
from vfs_mcp.ops.files.listing import FileInfo, ListResult, MountsResult
from vfs_mcp.ops.text.names import NAMES_NOTE, escaped, shown


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


def list_directory(result: ListResult) -> Reply:
    """``[FILE] name`` / ``[DIR] name`` lines in name order, hidden names included."""
    lines = [f"[DIR] {shown(e.name)}" if e.type == "directory" else f"[FILE] {shown(e.name)}" for e in result.entries]
    hint = "use search_files with a pattern to find the others"
    more = _more(result.total - len(lines), "entry", "entries", hint)
    return Reply("\n".join(lines), _noted(more, *(e.name for e in result.entries)))


def list_with_sizes(entries: list[Entry], limit: int = MAX_LISTED) -> Reply:
    """Entries (in their order) with padded names and file sizes, then the totals."""
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


def directory_tree(found: tuple[list[dict[str, Any]], int]) -> Reply:
    """The tree (``official.directory_tree``'s nodes, and how many were left out) as a JSON
    array of ``{name, type, children}``, 2-space indented."""
    top, omitted = found
    hint = "pass excludePatterns or a deeper path"
    return Reply(json.dumps(top, indent=2, ensure_ascii=False), _more(omitted, "entry", "entries", hint))


# -- searching --------------------------------------------------------------------------


def search_files(found: tuple[list[str], int]) -> Reply:
    """The paths a search found (``official.search_files``), one per line, and how many more matched."""
    paths, omitted = found
    shown_paths = [shown(p) for p in paths]
    hint = "narrow the pattern or the path"
    more = _more(omitted, "match", "matches", hint)
    return Reply("\n".join(shown_paths) or "No matches found", _noted(more, *shown_paths))


# -- metadata ---------------------------------------------------------------------------


def file_info(info: FileInfo) -> str:
    """``key: value`` lines in the reference's order; times in ISO 8601 UTC, where the backend has them."""
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


def allowed_directories(result: MountsResult) -> str:
    """``Allowed directories:`` and one mount root per line."""
    return "Allowed directories:\n" + "\n".join(m.root for m in result.directories)
