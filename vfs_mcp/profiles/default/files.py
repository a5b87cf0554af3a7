"""Default profile: reading, listing, metadata and writing of whole files and directories."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.changes.journal import session_journal
from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops import listing, read, transfers, write
from vfs_mcp.ops import undo as undo_ops
from vfs_mcp.ops.names import NAMES_NOTE, escaped, plural, shown
from vfs_mcp.profiles.args import DirArg, EncodingArg, FormatArg, PathArg
from vfs_mcp.profiles.results import (
    answer,
    catching,
    hints,
    human_size,
    media,
    read_hints,
    report,
)
from vfs_mcp.settings import Settings


def read_footer(meta: read.ReadResult) -> str:
    """The line after a file's text: what part of the file it is, and how to go on."""
    if meta.sha256 is not None:
        return f"[{meta.path}: {meta.size} bytes, sha256 {meta.sha256}]"
    span = f"[{meta.path}: bytes {meta.offset_bytes}-{meta.offset_bytes + meta.bytes_read} of {meta.size}"
    return span + (f"; more: offset_bytes={meta.next_offset_bytes}]" if meta.has_more else "; end of file]")


def register_read(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that only read."""
    max_read = settings.max_read_bytes

    @server.tool(
        title="Read file",
        annotations=read_hints("Read file"),
        description=(
            "Read a file, whole or a byte range (offset_bytes, max_bytes); images and audio come back viewable. "
            "encoding: a codec or 'base64'. By line: read_file_lines."
        ),
    )
    @catching
    def read_file(
        path: PathArg,
        encoding: EncodingArg = "utf-8",
        offset_bytes: Annotated[int | None, Field(ge=0)] = None,
        max_bytes: Annotated[int | None, Field(ge=1)] = None,
    ) -> CallToolResult:
        text, meta = read.read_file(vfs, path, encoding, offset_bytes, max_bytes, max_read_bytes=max_read, media=True)
        if meta.mime_type is not None:
            kind: Literal["image", "audio"] = "image" if meta.mime_type.startswith("image/") else "audio"
            return media(kind, text, meta.mime_type, f"[{meta.path}: {meta.mime_type}, {meta.size} bytes]", meta)
        return answer(text, read_footer(meta), data=meta)

    @server.tool(
        title="Read several files",
        annotations=read_hints("Read several files"),
        description=("Read several text files at once; each is headed by its path or gives its own error."),
    )
    @catching
    def read_multiple_files(
        paths: Annotated[list[str], Field(min_length=1)],
        encoding: EncodingArg = "utf-8",
    ) -> CallToolResult:
        texts, meta = read.read_multiple_files(vfs, paths, encoding, max_read_bytes=max_read)
        blocks = [
            f"{f.path}:\n{text}" if f.error is None else f"{f.path}: {f.error['code']}: {f.error['message']}"
            for f, text in zip(meta.files, texts, strict=True)
        ]
        return answer(*blocks, data=meta)

    @server.tool(
        title="List directory",
        annotations=read_hints("List directory"),
        description=(
            "List a directory: type, name, size. pattern: glob on names; page with offset/limit. Deeper: "
            "directory_tree."
        ),
    )
    @catching
    def list_directory(
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

    @server.tool(
        title="File info",
        annotations=read_hints("File info"),
        description="Metadata: type, size, times, permissions, symlink, MIME type; etag on S3.",
    )
    @catching
    def get_file_info(path: PathArg, format: FormatArg = "text") -> CallToolResult:
        info = listing.get_file_info(vfs, path)
        fields = info.model_dump()
        fields["name"] = shown(info.name)
        text = "\n".join(f"{k}: {v}" for k, v in fields.items() if v is not None)
        return report(info, text, format)

    @server.tool(
        title="List allowed directories",
        annotations=read_hints("List allowed directories"),
        description=(
            "Mounts this server can reach (backend, read-only). Paths: absolute inside a mount, a mount URL "
            "(s3://bucket/key) or relative to the working directory."
        ),
    )
    @catching
    def list_allowed_directories() -> CallToolResult:
        result = listing.list_allowed_directories(vfs)
        lines = [f"{m.root} ({m.backend}{', read-only' if m.read_only else ''})" for m in result.directories]
        return answer("Allowed directories:\n" + "\n".join(lines), data=result)

    @server.tool(
        title="Change directory",
        annotations=hints("Change directory", read_only=True),
        description="Set the working directory (relative paths start there).",
    )
    @catching
    def change_directory(path: DirArg) -> CallToolResult:
        result = listing.change_directory(vfs, path)
        return answer(f"{result.previous_dir} -> {result.current_dir}", data=result)

    @server.tool(
        title="Working directory",
        annotations=read_hints("Working directory"),
        description="The working directory.",
    )
    @catching
    def get_working_directory() -> CallToolResult:
        result = listing.get_working_directory(vfs)
        return answer(f"current_dir: {result.current_dir}\nscript_dir: {result.script_dir}", data=result)


def register_write(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that change files."""

    @server.tool(
        title="Undo",
        annotations=hints("Undo", read_only=False, destructive=True),
        description=(
            "Take back this session's newest change (to path, if given): a write, edit, patch (whole), move, copy "
            "or delete; only if its files are still as it left them, else CONFLICT. dry_run shows what it would do."
        ),
    )
    @catching
    def undo(path: str | None = None, dry_run: bool = False) -> CallToolResult:
        result = undo_ops.undo(
            vfs, session_journal(vfs.caches, settings.undo_limit, settings.undo_bytes), path, dry_run
        )
        lines = [f"restored {name}" for name in result.restored] + [f"removed {name}" for name in result.removed]
        head = f"{'would undo' if dry_run else 'undid'} {result.tool}"
        tail = f"{plural(result.remaining, 'change')} left to undo" + (
            f"; {result.dropped} older ones were dropped (--undo-limit)" if result.dropped else ""
        )
        return answer("\n".join([head, *lines, tail]), data=result)

    @server.tool(
        title="Write file",
        annotations=hints("Write file", read_only=False, destructive=True, idempotent=True),
        description=(
            "Create or replace a file (atomically on local disks), or append to it. expected_hash: sha256 from "
            "read_file; refuses if it changed. Partial changes: edit_file."
        ),
    )
    @catching
    def write_file(
        path: PathArg,
        content: str,
        encoding: EncodingArg = "utf-8",
        create_dirs: bool = False,
        append: bool = False,
        expected_hash: str | None = None,
    ) -> CallToolResult:
        result = write.write_file(
            vfs, path, content, encoding, create_dirs, append, expected_hash, max_bytes=settings.max_write_bytes
        )
        verb = "Appended to" if result.appended else ("Created" if result.created else "Wrote")
        digest = f", sha256 {result.sha256}" if result.sha256 else ""
        return answer(f"{verb} {result.path} ({result.bytes_written} bytes{digest})", data=result)

    @server.tool(
        title="Create directory",
        annotations=hints("Create directory", read_only=False, idempotent=True),
        description="Create a directory (parents too, by default).",
    )
    @catching
    def create_directory(path: DirArg, parents: bool = True, exist_ok: bool = True) -> CallToolResult:
        result = write.create_directory(vfs, path, parents, exist_ok)
        return answer(f"{'Created' if result.created else 'Already exists'}: {result.path}", data=result)

    @server.tool(
        title="Move file",
        annotations=hints("Move file", read_only=False, destructive=True),
        description="Move or rename a file or directory, across mounts too.",
    )
    @catching
    def move_file(source: PathArg, destination: PathArg, overwrite: bool = False) -> CallToolResult:
        result = transfers.move_file(vfs, source, destination, overwrite)
        return answer(f"Moved {result.source} -> {result.destination}", data=result)

    @server.tool(
        title="Copy file",
        annotations=hints("Copy file", read_only=False, destructive=True),
        description="Copy a file, or a directory with recursive=true, across mounts too.",
    )
    @catching
    def copy_file(
        source: PathArg,
        destination: PathArg,
        overwrite: bool = False,
        recursive: bool = False,
        create_dirs: bool = True,
    ) -> CallToolResult:
        result = transfers.copy_file(vfs, source, destination, overwrite, recursive, create_dirs)
        return answer(f"Copied {result.source} -> {result.destination} ({result.bytes_copied} bytes)", data=result)

    @server.tool(
        title="Delete path",
        annotations=hints("Delete path", read_only=False, destructive=True, idempotent=True),
        description=(
            "Delete a file, a symlink (not its target) or, with recursive=true, a directory. force: missing is OK."
        ),
    )
    @catching
    def delete_path(path: PathArg, recursive: bool = False, force: bool = False) -> CallToolResult:
        result = write.delete_path(vfs, path, recursive, force)
        return answer(
            f"Deleted {result.path}" if result.removed else f"Nothing to delete at {result.path}", data=result
        )
