"""Default profile: reading, listing, metadata and writing of whole files and directories.

``READS`` and ``WRITES`` are its rows: each adapter calls one operation and renders its result.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.changes import log_of
from vfs_mcp.changes.log import session_journal
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops import listing, read, transfers, write
from vfs_mcp.ops import undo as undo_ops
from vfs_mcp.ops.names import NAMES_NOTE, escaped, plural, shown
from vfs_mcp.profiles.args import DirArg, EncodingArg, FormatArg, PathArg, TextCoding
from vfs_mcp.profiles.results import answer, human_size, media, report
from vfs_mcp.settings import Settings


def read_footer(meta: read.ReadResult) -> str:
    """The line after a file's text: what part of the file it is, and how to go on."""
    if meta.sha256 is not None:
        return f"[{meta.path}: {meta.size} bytes, sha256 {meta.sha256}]"
    span = f"[{meta.path}: bytes {meta.offset_bytes}-{meta.offset_bytes + meta.bytes_read} of {meta.size}"
    return span + (f"; more: offset_bytes={meta.next_offset_bytes}]" if meta.has_more else "; end of file]")


def read_file(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    encoding: EncodingArg = "utf-8",
    offset_bytes: Annotated[int | None, Field(ge=0)] = None,
    max_bytes: Annotated[int | None, Field(ge=1)] = None,
) -> CallToolResult:
    limit = settings.max_read_bytes
    text, meta = read.read_file(vfs, path, encoding, offset_bytes, max_bytes, max_read_bytes=limit, media=True)
    if meta.mime_type is not None:
        kind: Literal["image", "audio"] = "image" if meta.mime_type.startswith("image/") else "audio"
        return media(kind, text, meta.mime_type, f"[{meta.path}: {meta.mime_type}, {meta.size} bytes]", meta)
    return answer(text, read_footer(meta), data=meta)


def read_multiple_files(
    vfs: JailedFS,
    settings: Settings,
    paths: Annotated[list[str], Field(min_length=1)],
    encoding: TextCoding = "utf-8",
) -> CallToolResult:
    texts, meta = read.read_multiple_files(vfs, paths, encoding, max_read_bytes=settings.max_read_bytes)
    blocks = [
        f"{f.path}:\n{text}" if f.error is None else f"{f.path}: {f.error['code']}: {f.error['message']}"
        for f, text in zip(meta.files, texts, strict=True)
    ]
    return answer(*blocks, data=meta)


def list_directory(
    vfs: JailedFS,
    settings: Settings,
    path: DirArg = ".",
    include_hidden: bool = False,
    pattern: str | None = None,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int, Field(ge=1, le=10000)] = listing.DEFAULT_LIST_LIMIT,
    format: FormatArg = "text",
) -> CallToolResult:
    result = listing.list_directory(vfs, path, include_hidden, pattern, offset, limit)
    lines = [
        f"[DIR] {shown(e.name)}"
        if e.type == "directory"
        else f"[{e.type.upper()}] {shown(e.name)}" + (f" ({human_size(e.size)})" if e.size is not None else "")
        for e in result.entries
    ]
    count = plural(result.total, "entry", "entries")
    lines.append(f"({count}; more from offset={result.next_offset})" if result.has_more else f"({count})")
    if escaped(*(e.name for e in result.entries)):
        lines.append(NAMES_NOTE)
    return report(result, "\n".join(lines), format)


def get_file_info(vfs: JailedFS, settings: Settings, path: PathArg, format: FormatArg = "text") -> CallToolResult:
    info = listing.get_file_info(vfs, path)
    fields = info.model_dump()
    fields["name"] = shown(info.name)
    return report(info, "\n".join(f"{k}: {v}" for k, v in fields.items() if v is not None), format)


def list_allowed_directories(vfs: JailedFS, settings: Settings) -> CallToolResult:
    result = listing.list_allowed_directories(vfs)
    lines = [f"{m.root} ({m.backend}{', read-only' if m.read_only else ''})" for m in result.directories]
    return answer("Allowed directories:\n" + "\n".join(lines), data=result)


def change_directory(vfs: JailedFS, settings: Settings, path: DirArg) -> CallToolResult:
    result = listing.change_directory(vfs, path)
    return answer(f"{result.previous_dir} -> {result.current_dir}", data=result)


def get_working_directory(vfs: JailedFS, settings: Settings) -> CallToolResult:
    result = listing.get_working_directory(vfs)
    return answer(f"current_dir: {result.current_dir}\nscript_dir: {result.script_dir}", data=result)


SHOWN_IDS = 20
"""Ids of the later changes a restore point's reply names in its text (its fields name all)."""


def undo(
    vfs: JailedFS,
    settings: Settings,
    path: str | None = None,
    change_id: str | None = None,
    dry_run: bool = False,
    and_after: bool = False,
) -> CallToolResult:
    changelog = log_of(vfs)
    journal = session_journal(changelog, settings.undo_limit)
    result = undo_ops.undo(vfs, changelog, journal, path, change_id, dry_run, and_after)
    lines = [f"restored {name}" for name in result.restored] + [f"removed {name}" for name in result.removed]
    head = f"{'would undo' if dry_run else 'undid'} {result.tool} (change {result.change_id})"
    later = result.undone[:-1]
    if later:
        more = f" and {len(later) - SHOWN_IDS} more" if len(later) > SHOWN_IDS else ""
        head += f" and {plural(len(later), 'later change')}: {', '.join(later[:SHOWN_IDS])}{more}"
    tail = f"{plural(result.remaining, 'change')} left to undo" + (
        f"; {result.dropped} older ones were dropped (--undo-limit)" if result.dropped else ""
    )
    return answer("\n".join([head, *lines, tail]), data=result)


def write_file(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    content: str,
    encoding: EncodingArg = "utf-8",
    create_dirs: bool = False,
    append: bool = False,
    expected_hash: str | None = None,
) -> CallToolResult:
    limit = settings.max_write_bytes
    result = write.write_file(vfs, path, content, encoding, create_dirs, append, expected_hash, max_bytes=limit)
    verb = "Appended to" if result.appended else ("Created" if result.created else "Wrote")
    digest = f", sha256 {result.sha256}" if result.sha256 else ""
    return answer(f"{verb} {result.path} ({result.bytes_written} bytes{digest})", data=result)


def create_directory(
    vfs: JailedFS, settings: Settings, path: DirArg, parents: bool = True, exist_ok: bool = True
) -> CallToolResult:
    result = write.create_directory(vfs, path, parents, exist_ok)
    return answer(f"{'Created' if result.created else 'Already exists'}: {result.path}", data=result)


def move_file(
    vfs: JailedFS, settings: Settings, source: PathArg, destination: PathArg, overwrite: bool = False
) -> CallToolResult:
    result = transfers.move_file(vfs, source, destination, overwrite)
    return answer(f"Moved {result.source} -> {result.destination}", data=result)


def copy_file(
    vfs: JailedFS,
    settings: Settings,
    source: PathArg,
    destination: PathArg,
    overwrite: bool = False,
    recursive: bool = False,
    create_dirs: bool = True,
) -> CallToolResult:
    result = transfers.copy_file(vfs, source, destination, overwrite, recursive, create_dirs)
    return answer(f"Copied {result.source} -> {result.destination} ({result.bytes_copied} bytes)", data=result)


def delete_path(
    vfs: JailedFS, settings: Settings, path: PathArg, recursive: bool = False, force: bool = False
) -> CallToolResult:
    result = write.delete_path(vfs, path, recursive, force)
    return answer(f"Deleted {result.path}" if result.removed else f"Nothing to delete at {result.path}", data=result)
