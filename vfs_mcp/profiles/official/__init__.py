"""The official profile (docs/profile-official.md): a drop-in for ``@modelcontextprotocol/server-filesystem``.

Its 13 tools and the deprecated ``read_file`` alias, with the reference's argument names,
defaults and result text, over our jail, limits, atomic writes and backends. Its table
(``TOOLS``): the text comes from ``render``.

Each reply carries its content once, as text (or an image/audio/resource block): no output
schema and no structured copy of the same text, which the reference sends with every reply.
Errors are ours (``isError``, a stable code first). A server whose mounts are all read-only
does not list the write tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from mcp_types import AudioContent, BlobResourceContents, CallToolResult, EmbeddedResource, ImageContent, TextContent
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.dialects import official
from vfs_mcp.ops.files import listing
from vfs_mcp.profiles.official import edit as official_edit
from vfs_mcp.profiles.official import render
from vfs_mcp.profiles.table import Tool
from vfs_mcp.settings import Settings

Path = Annotated[str, Field(description="Absolute, a mount URL (s3://...), or relative to the first allowed directory")]
Lines = Annotated[int | None, Field(ge=0, description="Return only this many lines (0: the whole file)")]
Excludes = Annotated[Sequence[str], Field(description="Globs of paths to leave out")]


def reply(text: str | render.Reply) -> CallToolResult:
    """A success carrying the reference's text once (and a note when a limit cut it short)."""
    if isinstance(text, str):
        text = render.Reply(text)
    blocks = [text.text] if text.note is None else [text.text, text.note]
    return CallToolResult(content=[TextContent(type="text", text=t) for t in blocks])


def media(found: official.Media) -> CallToolResult:
    if found.kind == "image":
        block: ImageContent | AudioContent | EmbeddedResource = ImageContent(data=found.data, mime_type=found.mime_type)
    elif found.kind == "audio":
        block = AudioContent(data=found.data, mime_type=found.mime_type)
    else:
        blob = BlobResourceContents(uri=found.uri, mime_type=found.mime_type, blob=found.data)
        block = EmbeddedResource(type="resource", resource=blob)
    return CallToolResult(content=[block])


def read_file(vfs: JailedFS, settings: Settings, path: Path, tail: Lines = None, head: Lines = None) -> CallToolResult:
    return reply(official.read_text(vfs, path, head, tail, settings.max_read_bytes))


def read_text_file(
    vfs: JailedFS, settings: Settings, path: Path, tail: Lines = None, head: Lines = None
) -> CallToolResult:
    return reply(official.read_text(vfs, path, head, tail, settings.max_read_bytes))


def read_media_file(vfs: JailedFS, settings: Settings, path: Path) -> CallToolResult:
    return media(official.read_media(vfs, path, settings.max_read_bytes))


def read_multiple_files(
    vfs: JailedFS,
    settings: Settings,
    paths: Annotated[list[str], Field(min_length=1, description="Paths of the files to read")],
) -> CallToolResult:
    return reply(official.read_many(vfs, paths, settings.max_read_bytes))


def list_directory(vfs: JailedFS, settings: Settings, path: Path) -> CallToolResult:
    return reply(render.list_directory(official.list_directory(vfs, path)))


def list_directory_with_sizes(
    vfs: JailedFS,
    settings: Settings,
    path: Path,
    sortBy: Annotated[Literal["name", "size"], Field(description="Sort entries by name or size")] = "name",
) -> CallToolResult:
    return reply(render.list_with_sizes(official.list_with_sizes(vfs, path, sortBy)))


def directory_tree(vfs: JailedFS, settings: Settings, path: Path, excludePatterns: Excludes = ()) -> CallToolResult:
    return reply(render.directory_tree(official.directory_tree(vfs, path, excludePatterns)))


def search_files(
    vfs: JailedFS,
    settings: Settings,
    path: Path,
    pattern: Annotated[str, Field(description="Glob on paths relative to `path`, e.g. '**/*.py'")],
    excludePatterns: Excludes = (),
) -> CallToolResult:
    return reply(render.search_files(official.search_files(vfs, path, pattern, excludePatterns)))


def get_file_info(vfs: JailedFS, settings: Settings, path: Path) -> CallToolResult:
    return reply(render.file_info(listing.get_file_info(vfs, path)))


def list_allowed_directories(vfs: JailedFS, settings: Settings) -> CallToolResult:
    return reply(render.allowed_directories(listing.list_allowed_directories(vfs)))


def write_file(
    vfs: JailedFS, settings: Settings, path: Path, content: Annotated[str, Field(description="The whole new content")]
) -> CallToolResult:
    return reply(official.write_text(vfs, path, content, settings.max_write_bytes))


def edit_file(
    vfs: JailedFS,
    settings: Settings,
    path: Path,
    edits: Annotated[list[official_edit.Edit], Field(description="Applied in order")],
    dryRun: Annotated[bool, Field(description="Preview changes using git-style diff format")] = False,
) -> CallToolResult:
    return reply(official_edit.edit_text(vfs, path, edits, dryRun, settings.max_edit_bytes, settings.diff_chars))


def create_directory(vfs: JailedFS, settings: Settings, path: Path) -> CallToolResult:
    return reply(official.create_directory(vfs, path))


def move_file(vfs: JailedFS, settings: Settings, source: Path, destination: Path) -> CallToolResult:
    return reply(official.move(vfs, source, destination))


TOOLS = (
    Tool(read_file, "Read File (Deprecated)", "Deprecated: the same as read_text_file; use read_text_file."),
    Tool(
        read_text_file,
        "Read Text File",
        "Read a file as UTF-8 text, whatever its extension: the whole file, or only its first `head` or last "
        "`tail` lines (not both). For images, audio and other binary files use read_media_file.",
    ),
    Tool(
        read_media_file,
        "Read Media File",
        "Read a file as base64 with its MIME type: images and audio as image/audio content, any other file as "
        "an embedded resource.",
    ),
    Tool(
        read_multiple_files,
        "Read Multiple Files",
        "Read several text files at once. Each comes back headed by its path, or with its own error; one "
        "failure never stops the others.",
    ),
    Tool(list_directory, "List Directory", "List a directory's entries, one per line, marked [FILE] or [DIR]."),
    Tool(
        list_directory_with_sizes,
        "List Directory with Sizes",
        "List a directory's entries marked [FILE] or [DIR] with file sizes, sorted by name or by size "
        "(largest first), then the totals.",
    ),
    Tool(
        directory_tree,
        "Directory Tree",
        "The whole tree under a directory as 2-space-indented JSON: entries with name, type (file/directory) "
        "and, on directories, children. excludePatterns are gitignore-style globs ('node_modules', '*.log').",
    ),
    Tool(
        search_files,
        "Search Files",
        "Find files and directories under a path whose path relative to it matches a glob: '*.ext' directly "
        "in it, '**/*.ext' at any depth. Returns full paths, one per line.",
    ),
    Tool(
        get_file_info,
        "Get File Info",
        "Metadata of a file or directory: size, times, type and permissions, without reading it.",
    ),
    Tool(
        list_allowed_directories,
        "List Allowed Directories",
        "The directories this server may access (and everything inside them).",
    ),
    Tool(
        write_file,
        "Write File",
        "Create a file, or replace one without warning, with UTF-8 text. To change part of a file use edit_file.",
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        edit_file,
        "Edit File",
        "Replace text in a file: each oldText must be found once, exactly or as whole lines equal once "
        "trimmed (then newText takes their indentation). Edits apply in order, all or none. Returns a "
        "git-style diff; dryRun previews it without writing.",
        read_only=False,
        destructive=True,
    ),
    Tool(
        create_directory,
        "Create Directory",
        "Create a directory and any missing parents; succeeds if it already exists.",
        read_only=False,
        idempotent=True,
    ),
    Tool(
        move_file,
        "Move File",
        "Move or rename a file or directory. Fails if the destination exists.",
        read_only=False,
        destructive=True,
    ),
)
