"""The ``fs`` profile (docs/profile-fs.md): ten tools with their guide's arguments and result JSON.

Its table (``TOOLS``): each tool calls one operation, ``vfs_mcp.ops.dialects.fs_reads`` and ``fs_writes`` (the
result models are in ``fs_results``). Names are
``fs_list_files`` by default and ``fs.list_files`` with ``--tool-names seed``. The text
block is the result JSON, as the original's clients read it. A server whose mounts are all
read-only does not list the write tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.dialects import fs_reads as fs
from vfs_mcp.ops.dialects import fs_results as models
from vfs_mcp.ops.dialects import fs_writes as writes
from vfs_mcp.ops.walks.progress import Progress
from vfs_mcp.profiles.results import record
from vfs_mcp.profiles.table import Tool
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


def list_files(
    vfs: JailedFS,
    settings: Settings,
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


def read_file(
    vfs: JailedFS,
    settings: Settings,
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


def search_text(
    vfs: JailedFS,
    settings: Settings,
    query: Annotated[str, Field(description="Text to find (a regex with mode='regex'); matched line by line")],
    progress: Progress,
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
    page = (include_globs, exclude_globs, max_results, context_lines, skip)
    return record(fs.search_text(vfs, query, mode, case_sensitive, root, *page, progress=progress))


def stat(vfs: JailedFS, settings: Settings, path: Path) -> Annotated[CallToolResult, models.StatResult]:
    return record(fs.stat(vfs, path))


def path_info(
    vfs: JailedFS,
    settings: Settings,
    path: Annotated[str, Field(description="Path to inspect; '.' (the server root) when omitted or empty")] = ".",
) -> Annotated[CallToolResult, models.PathInfoResult]:
    return record(fs.path_info(vfs, path))


def create_file(
    vfs: JailedFS,
    settings: Settings,
    path: WritePath,
    content: Annotated[str, Field(description="Initial content")] = "",
    overwrite: Annotated[bool, Field(description="Replace an existing file")] = False,
    create_parents: Annotated[bool, Field(description="Create missing parent directories")] = False,
) -> Annotated[CallToolResult, models.CreateFileResult]:
    return record(writes.create_file(vfs, path, content, overwrite, create_parents, settings.max_write_bytes))


def overwrite_file(
    vfs: JailedFS,
    settings: Settings,
    path: WritePath,
    content: Annotated[str, Field(description="The new content; the old is fully replaced")],
) -> Annotated[CallToolResult, models.PathResult]:
    return record(writes.overwrite_file(vfs, path, content, settings.max_write_bytes))


def delete_path(
    vfs: JailedFS,
    settings: Settings,
    path: WritePath,
    recursive: Annotated[bool, Field(description="Allow deleting a non-empty directory")] = False,
    force: Annotated[bool, Field(description="Succeed when the path does not exist")] = False,
) -> Annotated[CallToolResult, models.FsDeleteResult]:
    return record(writes.delete_path(vfs, path, recursive, force))


def copy_path(
    vfs: JailedFS,
    settings: Settings,
    from_: From,
    to: To,
    overwrite: Overwrite = False,
    recursive: Recursive = False,
    create_parents: CreateParents = True,
) -> Annotated[CallToolResult, models.FsCopyResult]:
    return record(writes.copy_path(vfs, from_, to, overwrite, recursive, create_parents))


def move_path(
    vfs: JailedFS,
    settings: Settings,
    from_: From,
    to: To,
    overwrite: Overwrite = False,
    recursive: Recursive = False,
    create_parents: CreateParents = True,
) -> Annotated[CallToolResult, models.FsMoveResult]:
    return record(writes.move_path(vfs, from_, to, overwrite, recursive, create_parents))


def _row(fn: Callable[..., CallToolResult], title: str, description: str, **options: bool) -> Tool:
    """A row named ``fs_<tool>`` (``fs.<tool>`` with ``--tool-names seed``)."""
    return Tool(fn, title, description, name=f"fs_{fn.__name__}", original_name=f"fs.{fn.__name__}", **options)


WRITE = {"read_only": False, "destructive": True}

TOOLS = (
    _row(
        list_files,
        "List files",
        "List files (and with include_dirs, directories) under a root relative to the server root, in "
        "depth-first name order, skipping what .gitignore/.ignore files ignore. Page with skip while has_more. "
        "include_metadata adds size and modified (UNIX seconds).",
    ),
    _row(
        read_file,
        "Read file",
        "Read part of a UTF-8 file: bytes (offset_bytes, max_bytes; default 64 KiB from 0) or lines "
        "(start_line 1-based, max_lines; default 200 from 1). Line fields alone imply range_type='lines'; "
        "mixing byte and line fields is an error. is_truncated says the file goes on: read the next range.",
    ),
    _row(
        search_text,
        "Search text",
        "Search file contents under a root for a literal string or a line-based regex, skipping what "
        ".gitignore/.ignore files ignore. Hits come in path then line order with column and context lines; "
        "page with skip while has_more.",
    ),
    _row(stat, "Stat path", "Whether a file or directory exists, its kind, size and modified time (UNIX seconds)."),
    _row(
        path_info,
        "Path info",
        "How a path resolves (full and canonical form), whether it exists, and the git repository root holding "
        "it (repo_root, null if none). Writes to absolute paths need a repo_root.",
    ),
    _row(
        create_file,
        "Create file",
        "Create a file with optional content. Fails with ALREADY_EXISTS if it exists, unless overwrite=true; "
        "create_parents=true makes missing folders. To replace an existing file use overwrite_file.",
        **WRITE,
    ),
    _row(
        overwrite_file,
        "Overwrite file",
        "Replace the whole content of an existing file (NOT_FOUND if it does not exist: use create_file).",
        **WRITE,
        idempotent=True,
    ),
    _row(
        delete_path,
        "Delete path",
        "Delete a file, a link (never its target) or, with recursive=true, a directory and everything in it. "
        "force=true makes a missing path a success (existed=false).",
        **WRITE,
        idempotent=True,
    ),
    _row(
        copy_path,
        "Copy path",
        "Copy a file (a directory with recursive=true), across mounts too. ALREADY_EXISTS if the destination "
        "exists, unless overwrite=true. Missing parents of the destination are created unless create_parents=false.",
        **WRITE,
    ),
    _row(
        move_path,
        "Move path",
        "Move or rename a file (a directory with recursive=true), across mounts too. ALREADY_EXISTS if the "
        "destination exists, unless overwrite=true. Missing parents are created unless create_parents=false.",
        **WRITE,
    ),
)
