"""The official profile (SPEC §5): a drop-in for ``@modelcontextprotocol/server-filesystem``.

Its 13 tools and the deprecated ``read_file`` alias, with the reference's argument names,
defaults and result text, over our jail, limits, atomic writes and backends. Registration
only: the text comes from ``render``.

Each reply carries its content once, as text (or an image/audio/resource block): no output
schema and no structured copy of the same text, which the reference sends with every reply.
Errors are ours (``isError``, a stable code first). A server whose mounts are all read-only
does not list the write tools (SPEC §6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import AudioContent, BlobResourceContents, CallToolResult, EmbeddedResource, ImageContent, TextContent
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.profiles.official import edit as official_edit
from vfs_mcp.profiles.official import render as compat
from vfs_mcp.profiles.results import catching, hints, read_hints
from vfs_mcp.settings import Settings

Path = Annotated[str, Field(description="Absolute, a mount URL (s3://...), or relative to the first allowed directory")]
Lines = Annotated[int | None, Field(ge=0, description="Return only this many lines (0: the whole file)")]
Excludes = Annotated[Sequence[str], Field(description="Globs of paths to leave out")]


def reply(text: str | compat.Reply) -> CallToolResult:
    """A success carrying the reference's text once (and a note when a limit cut it short)."""
    if isinstance(text, str):
        text = compat.Reply(text)
    blocks = [text.text] if text.note is None else [text.text, text.note]
    return CallToolResult(content=[TextContent(type="text", text=t) for t in blocks])


def media(found: compat.Media) -> CallToolResult:
    if found.kind == "image":
        block: ImageContent | AudioContent | EmbeddedResource = ImageContent(data=found.data, mime_type=found.mime_type)
    elif found.kind == "audio":
        block = AudioContent(data=found.data, mime_type=found.mime_type)
    else:
        blob = BlobResourceContents(uri=found.uri, mime_type=found.mime_type, blob=found.data)
        block = EmbeddedResource(type="resource", resource=blob)
    return CallToolResult(content=[block])


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Add the official tools to ``server``; write tools only when some mount is writable."""
    register_read(server, vfs, settings)
    if any(not mount.read_only for mount in vfs.mounts):
        register_write(server, vfs, settings)


def register_read(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that only read."""
    max_read = settings.max_read_bytes

    def read_text(path: str, tail: int | None, head: int | None) -> CallToolResult:
        return reply(compat.read_text(vfs, path, head, tail, max_read))

    @server.tool(
        name="read_file",
        title="Read File (Deprecated)",
        annotations=read_hints("Read File (Deprecated)"),
        description="Deprecated: the same as read_text_file; use read_text_file.",
    )
    @catching
    def read_file(path: Path, tail: Lines = None, head: Lines = None) -> CallToolResult:
        return read_text(path, tail, head)

    @server.tool(
        name="read_text_file",
        title="Read Text File",
        annotations=read_hints("Read Text File"),
        description=(
            "Read a file as UTF-8 text, whatever its extension: the whole file, or only its first `head` or last "
            "`tail` lines (not both). For images, audio and other binary files use read_media_file."
        ),
    )
    @catching
    def read_text_file(path: Path, tail: Lines = None, head: Lines = None) -> CallToolResult:
        return read_text(path, tail, head)

    @server.tool(
        name="read_media_file",
        title="Read Media File",
        annotations=read_hints("Read Media File"),
        description=(
            "Read a file as base64 with its MIME type: images and audio as image/audio content, any other file as "
            "an embedded resource."
        ),
    )
    @catching
    def read_media_file(path: Path) -> CallToolResult:
        return media(compat.read_media(vfs, path, max_read))

    @server.tool(
        name="read_multiple_files",
        title="Read Multiple Files",
        annotations=read_hints("Read Multiple Files"),
        description=(
            "Read several text files at once. Each comes back headed by its path, or with its own error; one "
            "failure never stops the others."
        ),
    )
    @catching
    def read_multiple_files(
        paths: Annotated[list[str], Field(min_length=1, description="Paths of the files to read")],
    ) -> CallToolResult:
        return reply(compat.read_many(vfs, paths, max_read))

    @server.tool(
        name="list_directory",
        title="List Directory",
        annotations=read_hints("List Directory"),
        description="List a directory's entries, one per line, marked [FILE] or [DIR].",
    )
    @catching
    def list_directory(path: Path) -> CallToolResult:
        return reply(compat.list_directory(vfs, path))

    @server.tool(
        name="list_directory_with_sizes",
        title="List Directory with Sizes",
        annotations=read_hints("List Directory with Sizes"),
        description=(
            "List a directory's entries marked [FILE] or [DIR] with file sizes, sorted by name or by size "
            "(largest first), then the totals."
        ),
    )
    @catching
    def list_directory_with_sizes(
        path: Path,
        sortBy: Annotated[Literal["name", "size"], Field(description="Sort entries by name or size")] = "name",
    ) -> CallToolResult:
        return reply(compat.list_with_sizes(vfs, path, sortBy))

    @server.tool(
        name="directory_tree",
        title="Directory Tree",
        annotations=read_hints("Directory Tree"),
        description=(
            "The whole tree under a directory as 2-space-indented JSON: entries with name, type (file/directory) "
            "and, on directories, children. excludePatterns are gitignore-style globs ('node_modules', '*.log')."
        ),
    )
    @catching
    def directory_tree(path: Path, excludePatterns: Excludes = ()) -> CallToolResult:
        return reply(compat.directory_tree(vfs, path, excludePatterns))

    @server.tool(
        name="search_files",
        title="Search Files",
        annotations=read_hints("Search Files"),
        description=(
            "Find files and directories under a path whose path relative to it matches a glob: '*.ext' directly "
            "in it, '**/*.ext' at any depth. Returns full paths, one per line."
        ),
    )
    @catching
    def search_files(
        path: Path,
        pattern: Annotated[str, Field(description="Glob on paths relative to `path`, e.g. '**/*.py'")],
        excludePatterns: Excludes = (),
    ) -> CallToolResult:
        return reply(compat.search_files(vfs, path, pattern, excludePatterns))

    @server.tool(
        name="get_file_info",
        title="Get File Info",
        annotations=read_hints("Get File Info"),
        description="Metadata of a file or directory: size, times, type and permissions, without reading it.",
    )
    @catching
    def get_file_info(path: Path) -> CallToolResult:
        return reply(compat.file_info(vfs, path))

    @server.tool(
        name="list_allowed_directories",
        title="List Allowed Directories",
        annotations=read_hints("List Allowed Directories"),
        description="The directories this server may access (and everything inside them).",
    )
    @catching
    def list_allowed_directories() -> CallToolResult:
        return reply(compat.allowed_directories(vfs))


def register_write(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that change files."""

    @server.tool(
        name="write_file",
        title="Write File",
        annotations=hints("Write File", read_only=False, destructive=True, idempotent=True),
        description="Create a file, or replace one without warning, with UTF-8 text. To change part of a file use edit_file.",
    )
    @catching
    def write_file(path: Path, content: Annotated[str, Field(description="The whole new content")]) -> CallToolResult:
        return reply(compat.write_text(vfs, path, content, settings.max_write_bytes))

    @server.tool(
        name="edit_file",
        title="Edit File",
        annotations=hints("Edit File", read_only=False, destructive=True),
        description=(
            "Replace text in a file: each oldText must be found once, exactly or as whole lines equal once "
            "trimmed (then newText takes their indentation). Edits apply in order, all or none. Returns a "
            "git-style diff; dryRun previews it without writing."
        ),
    )
    @catching
    def edit_file(
        path: Path,
        edits: Annotated[list[official_edit.Edit], Field(description="Applied in order")],
        dryRun: Annotated[bool, Field(description="Preview changes using git-style diff format")] = False,
    ) -> CallToolResult:
        return reply(official_edit.edit_text(vfs, path, edits, dryRun, settings.max_edit_bytes))

    @server.tool(
        name="create_directory",
        title="Create Directory",
        annotations=hints("Create Directory", read_only=False, idempotent=True),
        description="Create a directory and any missing parents; succeeds if it already exists.",
    )
    @catching
    def create_directory(path: Path) -> CallToolResult:
        return reply(compat.create_directory(vfs, path))

    @server.tool(
        name="move_file",
        title="Move File",
        annotations=hints("Move File", read_only=False, destructive=True),
        description="Move or rename a file or directory. Fails if the destination exists.",
    )
    @catching
    def move_file(source: Path, destination: Path) -> CallToolResult:
        return reply(compat.move(vfs, source, destination))
