"""Default profile: reading, listing and metadata of whole files and directories (their
changes are in ``writes``, so a first read imports no part of the write path).

Each adapter calls one operation and renders its result.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.files import listing, read
from vfs_mcp.ops.text.names import NAMES_NOTE, escaped, plural, shown
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
