"""The ``fs`` profile (SPEC §5, seed 001): ten tools with the seed's arguments and result JSON.

Registration only: each tool calls one operation in ``ops`` (the seed's result models are in ``results``). Names are
``fs_list_files`` by default and ``fs.list_files`` with ``--tool-names seed``. The text
block is the result JSON, as the seed's clients read it. A server whose mounts are all
read-only does not list the write tools (SPEC §6).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.profiles.fs import models, writes
from vfs_mcp.profiles.fs import ops as fs
from vfs_mcp.profiles.results import catching, hints, read_hints, record, reporter
from vfs_mcp.settings import Settings

Path = Annotated[str, Field(description="Relative to the server root, or absolute inside a mount")]
WritePath = Annotated[
    str, Field(description="Relative to the server root, or absolute inside a mount and a git repository")
]
Root = Annotated[str, Field(description="Directory relative to the server root, e.g. '.' or 'src'")]
Include = Annotated[
    list[str] | None, Field(description="Keep only paths matching one of these gitignore-style globs, e.g. '**/*.rs'")
]
Exclude = Annotated[
    list[str] | None, Field(description="Skip paths matching one of these globs; a matching folder with its content")
]
From = Annotated[str, Field(alias="from", description="Source path")]
To = Annotated[str, Field(description="Destination path")]
Overwrite = Annotated[bool, Field(description="Replace the destination if it exists")]
Recursive = Annotated[bool, Field(description="Required to take a directory and everything in it")]
CreateParents = Annotated[bool, Field(description="Create missing parent directories of the destination")]


def _from_keyword(fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """Let a tool take the seed's argument ``from`` (a Python keyword) as its parameter ``from_``."""

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> CallToolResult:
        if "from" in kwargs:
            kwargs["from_"] = kwargs.pop("from")
        return fn(**kwargs)

    return wrapper


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Add the fs tools to ``server``; write tools only when some mount is writable."""
    register_read(server, vfs, settings)
    if any(not mount.read_only for mount in vfs.mounts):
        register_write(server, vfs, settings)


def register_read(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    @server.tool(
        name=settings.name("fs_list_files", "fs.list_files"),
        title="List files",
        annotations=read_hints("List files"),
        description=(
            "List files (and with include_dirs, directories) under a root relative to the server root, in "
            "depth-first name order, skipping what .gitignore/.ignore files ignore. Page with skip while has_more. "
            "include_metadata adds size and modified (UNIX seconds)."
        ),
    )
    @catching
    def list_files(
        root: Root = ".",
        recursive: Annotated[bool, Field(description="Recurse into subdirectories")] = True,
        include_globs: Include = None,
        exclude_globs: Exclude = None,
        max_results: Annotated[int, Field(ge=1, le=100000, description="Entries to return")] = fs.DEFAULT_LIST_RESULTS,
        include_dirs: Annotated[bool, Field(description="List directories too")] = False,
        include_metadata: Annotated[bool, Field(description="Add size and modified to each entry")] = False,
        skip: Annotated[int, Field(ge=0, description="Matching entries to skip (paging)")] = 0,
    ) -> Annotated[CallToolResult, models.ListFilesResult]:
        return record(
            fs.list_files(
                vfs, root, recursive, include_globs, exclude_globs, max_results, include_dirs, include_metadata, skip
            )
        )

    @server.tool(
        name=settings.name("fs_read_file", "fs.read_file"),
        title="Read file",
        annotations=read_hints("Read file"),
        description=(
            "Read part of a UTF-8 file: bytes (offset_bytes, max_bytes; default 64 KiB from 0) or lines "
            "(start_line 1-based, max_lines; default 200 from 1). Line fields alone imply range_type='lines'; "
            "mixing byte and line fields is an error. is_truncated says the file goes on: read the next range."
        ),
    )
    @catching
    def read_file(
        path: Path,
        range_type: Annotated[
            models.RangeType | None, Field(description="'bytes' or 'lines'; default 'lines' when line fields are set")
        ] = None,
        offset_bytes: Annotated[int | None, Field(ge=0, description="0-based byte offset. Default: 0")] = None,
        max_bytes: Annotated[int | None, Field(ge=1, description="Bytes to read. Default: 65536")] = None,
        start_line: Annotated[int | None, Field(ge=1, description="1-based first line. Default: 1")] = None,
        max_lines: Annotated[int | None, Field(ge=1, description="Lines to read. Default: 200")] = None,
    ) -> Annotated[CallToolResult, models.ReadFileResult]:
        return record(
            fs.read_file(vfs, path, range_type, offset_bytes, max_bytes, start_line, max_lines, settings.max_read_bytes)
        )

    @server.tool(
        name=settings.name("fs_search_text", "fs.search_text"),
        title="Search text",
        annotations=read_hints("Search text"),
        description=(
            "Search file contents under a root for a literal string or a line-based regex, skipping what "
            ".gitignore/.ignore files ignore. Hits come in path then line order with column and context lines; "
            "page with skip while has_more."
        ),
    )
    @catching
    def search_text(
        query: Annotated[str, Field(description="Text to find (a regex with mode='regex'); matched line by line")],
        ctx: Context,
        mode: Annotated[models.SearchMode, Field(description="'literal' or 'regex'")] = "literal",
        case_sensitive: Annotated[bool, Field(description="Match case exactly")] = False,
        root: Root = ".",
        include_globs: Include = None,
        exclude_globs: Exclude = None,
        max_results: Annotated[int, Field(ge=1, le=100000, description="Hits to return")] = fs.DEFAULT_SEARCH_RESULTS,
        context_lines: Annotated[
            int, Field(ge=0, le=100, description="Lines before and after each hit")
        ] = fs.DEFAULT_CONTEXT_LINES,
        skip: Annotated[int, Field(ge=0, description="Hits to skip (paging)")] = 0,
    ) -> Annotated[CallToolResult, models.SearchTextResult]:
        result = fs.search_text(
            vfs,
            query,
            mode,
            case_sensitive,
            root,
            include_globs,
            exclude_globs,
            max_results,
            context_lines,
            skip,
            progress=reporter(ctx),
        )
        return record(result)

    @server.tool(
        name=settings.name("fs_stat", "fs.stat"),
        title="Stat path",
        annotations=read_hints("Stat path"),
        description="Whether a file or directory exists, its kind, size and modified time (UNIX seconds).",
    )
    @catching
    def stat(path: Path) -> Annotated[CallToolResult, models.StatResult]:
        return record(fs.stat(vfs, path))

    @server.tool(
        name=settings.name("fs_path_info", "fs.path_info"),
        title="Path info",
        annotations=read_hints("Path info"),
        description=(
            "How a path resolves (full and canonical form), whether it exists, and the git repository root holding "
            "it (repo_root, null if none). Writes to absolute paths need a repo_root."
        ),
    )
    @catching
    def path_info(
        path: Annotated[str, Field(description="Path to inspect; '.' (the server root) when omitted or empty")] = ".",
    ) -> Annotated[CallToolResult, models.PathInfoResult]:
        return record(fs.path_info(vfs, path))


def register_write(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    @server.tool(
        name=settings.name("fs_create_file", "fs.create_file"),
        title="Create file",
        annotations=hints("Create file", read_only=False, destructive=True),
        description=(
            "Create a file with optional content. Fails with ALREADY_EXISTS if it exists, unless overwrite=true; "
            "create_parents=true makes missing folders. To replace an existing file use overwrite_file."
        ),
    )
    @catching
    def create_file(
        path: WritePath,
        content: Annotated[str, Field(description="Initial content")] = "",
        overwrite: Annotated[bool, Field(description="Replace an existing file")] = False,
        create_parents: Annotated[bool, Field(description="Create missing parent directories")] = False,
    ) -> Annotated[CallToolResult, models.CreateFileResult]:
        return record(writes.create_file(vfs, path, content, overwrite, create_parents, settings.max_write_bytes))

    @server.tool(
        name=settings.name("fs_overwrite_file", "fs.overwrite_file"),
        title="Overwrite file",
        annotations=hints("Overwrite file", read_only=False, destructive=True, idempotent=True),
        description="Replace the whole content of an existing file (NOT_FOUND if it does not exist: use create_file).",
    )
    @catching
    def overwrite_file(
        path: WritePath,
        content: Annotated[str, Field(description="The new content; the old is fully replaced")],
    ) -> Annotated[CallToolResult, models.PathResult]:
        return record(writes.overwrite_file(vfs, path, content, settings.max_write_bytes))

    @server.tool(
        name=settings.name("fs_delete_path", "fs.delete_path"),
        title="Delete path",
        annotations=hints("Delete path", read_only=False, destructive=True, idempotent=True),
        description=(
            "Delete a file, a link (never its target) or, with recursive=true, a directory and everything in it. "
            "force=true makes a missing path a success (existed=false)."
        ),
    )
    @catching
    def delete_path(
        path: WritePath,
        recursive: Annotated[bool, Field(description="Allow deleting a non-empty directory")] = False,
        force: Annotated[bool, Field(description="Succeed when the path does not exist")] = False,
    ) -> Annotated[CallToolResult, models.DeleteResult]:
        return record(writes.delete_path(vfs, path, recursive, force))

    @server.tool(
        name=settings.name("fs_copy_path", "fs.copy_path"),
        title="Copy path",
        annotations=hints("Copy path", read_only=False, destructive=True),
        description=(
            "Copy a file (a directory with recursive=true), across mounts too. ALREADY_EXISTS if the destination "
            "exists, unless overwrite=true. Missing parents of the destination are created unless create_parents=false."
        ),
    )
    @catching
    @_from_keyword
    def copy_path(
        from_: From,
        to: To,
        overwrite: Overwrite = False,
        recursive: Recursive = False,
        create_parents: CreateParents = True,
    ) -> Annotated[CallToolResult, models.CopyResult]:
        return record(writes.copy_path(vfs, from_, to, overwrite, recursive, create_parents))

    @server.tool(
        name=settings.name("fs_move_path", "fs.move_path"),
        title="Move path",
        annotations=hints("Move path", read_only=False, destructive=True),
        description=(
            "Move or rename a file (a directory with recursive=true), across mounts too. ALREADY_EXISTS if the "
            "destination exists, unless overwrite=true. Missing parents are created unless create_parents=false."
        ),
    )
    @catching
    @_from_keyword
    def move_path(
        from_: From,
        to: To,
        overwrite: Overwrite = False,
        recursive: Recursive = False,
        create_parents: CreateParents = True,
    ) -> Annotated[CallToolResult, models.MoveResult]:
        return record(writes.move_path(vfs, from_, to, overwrite, recursive, create_parents))
