"""Default profile: reading, listing, metadata and writing of whole files and directories."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.filesystem import JailedFS
from vfs_mcp.ops import listing, read, write
from vfs_mcp.profiles.args import DirArg, EncodingArg, FormatArg, PathArg
from vfs_mcp.settings import Settings
from vfs_mcp.tooling import catching, hints, human_size, ok, read_hints


def register_read(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that only read."""
    max_read = settings.max_read_bytes

    @server.tool(
        title="Read file",
        annotations=read_hints("Read file"),
        description=(
            "Read a file's content. Whole file by default; pass offset_bytes/max_bytes for a byte range of a large "
            "file (the reply says has_more and next_offset_bytes). encoding='base64' for binary files. "
            "For lines use read_file_lines, head_file or tail_file."
        ),
    )
    @catching
    def read_file(
        path: PathArg,
        encoding: EncodingArg = "utf-8",
        offset_bytes: Annotated[int | None, Field(ge=0, description="Byte offset to start at")] = None,
        max_bytes: Annotated[int | None, Field(ge=1, description="Bytes to read from offset_bytes")] = None,
    ) -> Annotated[CallToolResult, read.ReadResult]:
        text, meta = read.read_file(vfs, path, encoding, offset_bytes, max_bytes, max_read_bytes=max_read)
        return ok(meta, text)

    @server.tool(
        title="Read several files",
        annotations=read_hints("Read several files"),
        description=(
            "Read several files at once, concurrently. Each file comes back as its own text block headed by its "
            "path, or with its own error; one failure never fails the call."
        ),
    )
    @catching
    def read_multiple_files(
        paths: Annotated[list[str], Field(min_length=1, description="Paths to read")],
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, read.MultiReadResult]:
        texts, meta = read.read_multiple_files(vfs, paths, encoding, max_read_bytes=max_read)
        blocks = [
            f"{f.path}:\n{text}"
            if f.ok
            else f"{f.path}: {f.error['code'] if f.error else ''}: {f.error['message'] if f.error else ''}"
            for f, text in zip(meta.files, texts, strict=True)
        ]
        return ok(meta, blocks)

    @server.tool(
        title="List directory",
        annotations=read_hints("List directory"),
        description=(
            "List one directory: name, type and size of each entry, in name order. Use directory_tree for nested "
            "levels and search_files to find names. Paged with offset/limit (has_more says when to go on)."
        ),
    )
    @catching
    def list_directory(
        path: DirArg = ".",
        include_hidden: Annotated[bool, Field(description="Include names starting with '.'")] = False,
        pattern: Annotated[str | None, Field(description="Glob on names, case-insensitive, e.g. '*.py'")] = None,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=10000)] = listing.DEFAULT_LIST_LIMIT,
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, listing.ListResult]:
        result = listing.list_directory(vfs, path, include_hidden, pattern, offset, limit)
        lines = [
            f"[DIR] {e.name}"
            if e.type == "directory"
            else f"[{e.type.upper()}] {e.name}" + (f" ({human_size(e.size)})" if e.size is not None else "")
            for e in result.entries
        ]
        lines.append(
            f"({result.total} entries; more from offset={result.next_offset})"
            if result.has_more
            else f"({result.total} entries)"
        )
        return ok(result, "\n".join(lines), format)

    @server.tool(
        title="File info",
        annotations=read_hints("File info"),
        description=(
            "Metadata of a file or directory: type, size, created/modified/accessed times where the backend has "
            "them, permissions, symlink flag, mime type; etag and storage class on S3."
        ),
    )
    @catching
    def get_file_info(path: PathArg, format: FormatArg = "text") -> Annotated[CallToolResult, listing.FileInfo]:
        info = listing.get_file_info(vfs, path)
        text = "\n".join(f"{k}: {v}" for k, v in info.model_dump().items() if v is not None)
        return ok(info, text, format)

    @server.tool(
        title="List allowed directories",
        annotations=read_hints("List allowed directories"),
        description="The mounts this server may touch, with backend and read-only flag. Paths must lie inside one.",
    )
    @catching
    def list_allowed_directories() -> Annotated[CallToolResult, listing.MountsResult]:
        result = listing.list_allowed_directories(vfs)
        lines = [f"{m.root} ({m.backend}{', read-only' if m.read_only else ''})" for m in result.directories]
        return ok(result, "Allowed directories:\n" + "\n".join(lines))

    @server.tool(
        title="Change directory",
        annotations=hints("Change directory", read_only=True),
        description="Set the working directory that relative paths start from. Returns the previous and new one.",
    )
    @catching
    def change_directory(path: DirArg) -> Annotated[CallToolResult, listing.ChangeDirectoryResult]:
        result = listing.change_directory(vfs, path)
        return ok(result, f"{result.previous_dir} -> {result.current_dir}")

    @server.tool(
        title="Working directory",
        annotations=read_hints("Working directory"),
        description="The working directory relative paths start from (current_dir), and where the server lives.",
    )
    @catching
    def get_working_directory() -> Annotated[CallToolResult, listing.WorkingDirectoryResult]:
        result = listing.get_working_directory(vfs)
        return ok(result, f"current_dir: {result.current_dir}\nscript_dir: {result.script_dir}")


def register_write(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that change files."""

    @server.tool(
        title="Write file",
        annotations=hints("Write file", read_only=False, destructive=True, idempotent=True),
        description=(
            "Create or replace a file with content (atomic on local disks), or append=true to add to its end. "
            "create_dirs=true makes missing parents. expected_hash (sha256 from read_file) refuses to overwrite "
            "a file changed since. To change part of a file use edit_file."
        ),
    )
    @catching
    def write_file(
        path: PathArg,
        content: Annotated[str, Field(description="Text to write (base64 text with encoding='base64')")],
        encoding: EncodingArg = "utf-8",
        create_dirs: Annotated[bool, Field(description="Create missing parent directories")] = False,
        append: Annotated[bool, Field(description="Add to the end instead of replacing")] = False,
        expected_hash: Annotated[str | None, Field(description="sha256 the current content must have")] = None,
    ) -> Annotated[CallToolResult, write.WriteResult]:
        result = write.write_file(
            vfs, path, content, encoding, create_dirs, append, expected_hash, max_bytes=settings.max_write_bytes
        )
        verb = "Appended" if result.appended else ("Created" if result.created else "Wrote")
        return ok(result, f"{verb} {result.path} ({result.bytes_written} bytes)")

    @server.tool(
        title="Create directory",
        annotations=hints("Create directory", read_only=False, idempotent=True),
        description="Create a directory (and its parents by default). Succeeds if it already exists unless exist_ok=false.",
    )
    @catching
    def create_directory(
        path: DirArg,
        parents: Annotated[bool, Field(description="Create missing parents")] = True,
        exist_ok: Annotated[bool, Field(description="Succeed when it already exists")] = True,
    ) -> Annotated[CallToolResult, write.DirectoryResult]:
        result = write.create_directory(vfs, path, parents, exist_ok)
        return ok(result, f"{'Created' if result.created else 'Already exists'}: {result.path}")

    @server.tool(
        title="Move file",
        annotations=hints("Move file", read_only=False, destructive=True),
        description=(
            "Move or rename a file or directory (across mounts too). Fails with ALREADY_EXISTS if the destination "
            "exists, unless overwrite=true."
        ),
    )
    @catching
    def move_file(
        source: PathArg,
        destination: PathArg,
        overwrite: Annotated[bool, Field(description="Replace an existing destination")] = False,
    ) -> Annotated[CallToolResult, write.MoveResult]:
        result = write.move_file(vfs, source, destination, overwrite)
        return ok(result, f"Moved {result.source} -> {result.destination}")

    @server.tool(
        title="Copy file",
        annotations=hints("Copy file", read_only=False, destructive=True),
        description=(
            "Copy a file, or a directory with recursive=true (across mounts too; links inside are skipped). "
            "Fails with ALREADY_EXISTS if the destination exists, unless overwrite=true."
        ),
    )
    @catching
    def copy_file(
        source: PathArg,
        destination: PathArg,
        overwrite: Annotated[bool, Field(description="Replace an existing destination")] = False,
        recursive: Annotated[bool, Field(description="Copy a directory and everything in it")] = False,
        create_dirs: Annotated[bool, Field(description="Create missing parents of the destination")] = True,
    ) -> Annotated[CallToolResult, write.CopyResult]:
        result = write.copy_file(vfs, source, destination, overwrite, recursive, create_dirs)
        return ok(result, f"Copied {result.source} -> {result.destination} ({result.bytes_copied} bytes)")

    @server.tool(
        title="Delete path",
        annotations=hints("Delete path", read_only=False, destructive=True, idempotent=True),
        description=(
            "Delete a file, a symlink (never its target) or, with recursive=true, a directory tree. "
            "force=true treats a missing path as success. A mount root is never deleted."
        ),
    )
    @catching
    def delete_path(
        path: PathArg,
        recursive: Annotated[bool, Field(description="Delete a non-empty directory and its contents")] = False,
        force: Annotated[bool, Field(description="Succeed when the path does not exist")] = False,
    ) -> Annotated[CallToolResult, write.DeleteResult]:
        result = write.delete_path(vfs, path, recursive, force)
        return ok(result, f"Deleted {result.path}" if result.removed else f"Nothing to delete at {result.path}")
