"""The ide profile (SPEC §5, seed 003): editor buffers opened, read, saved and closed by URI.

Registration only: the buffers live in ``vfs_mcp.ops.buffers``, one set per MCP session
(``vfs_mcp.sessions``): one client never sees another's. Names are ``file_open``...; ``--tool-names seed`` gives ``file/open``....
A server whose mounts are all read-only does not list ``file_save``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops import buffers as ops
from vfs_mcp.profiles.results import catching, hints, read_hints, record
from vfs_mcp.sessions import state_of
from vfs_mcp.settings import Settings

UriArg = Annotated[
    str,
    Field(
        description="file:///abs/path for local folders (percent-encoding allowed), the mount URL otherwise "
        "(s3://bucket/key, memory://name/x)"
    ),
]


def register(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Add the file/* tools to ``server``, over one set of buffers."""

    def new_buffers() -> ops.Buffers:
        return ops.Buffers(vfs, max_read_bytes=settings.max_read_bytes, max_save_bytes=settings.max_write_bytes)

    shared = new_buffers()  # for calls made outside any MCP session

    def buffers() -> ops.Buffers:
        """The calling session's buffers: one client never sees another's."""
        return state_of("ide-buffers", new_buffers, lambda: shared)

    opens, reads, saves, closes = (settings.name(f"file_{v}", f"file/{v}") for v in ("open", "read", "save", "close"))

    @server.tool(
        name=opens,
        title="Open file",
        annotations=read_hints("Open file"),
        description=(
            f"Open a text file in an editor buffer kept until {closes}, with the cursor at line/column (1-based; "
            "out-of-range positions are clamped and the actual one returned). The encoding is detected and kept "
            "on save. Opening an open file again reloads it from disk."
        ),
    )
    @catching
    def file_open(
        uri: UriArg,
        line: Annotated[int | None, Field(description="1-based line (default 1)")] = None,
        column: Annotated[int | None, Field(description="1-based column (default 1)")] = None,
        encoding: Annotated[str | None, Field(description="Decode with this codec instead of detecting")] = None,
    ) -> Annotated[CallToolResult, ops.OpenResult]:
        result = buffers().open(uri, line, column, encoding)
        note = " (unsaved content kept; not reloaded)" if result.modified else ""
        return record(
            result,
            f"Opened {result.buffer} at line {result.line}, column {result.column} "
            f"({result.encoding}, {result.total_lines} line{'' if result.total_lines == 1 else 's'}){note}",
        )

    @server.tool(
        name=reads,
        title="Read file",
        annotations=read_hints("Read file"),
        description=(
            "Read a text file, or lines start_line..end_line (1-based, inclusive, clamped). An open file is read "
            f"from its buffer; externally_modified=true means it changed on disk since ({opens} reloads it)."
        ),
    )
    @catching
    def file_read(
        uri: UriArg,
        start_line: Annotated[int | None, Field(description="First line, 1-based (default 1)")] = None,
        end_line: Annotated[int | None, Field(description="Last line, inclusive (default: the last)")] = None,
    ) -> Annotated[CallToolResult, ops.ReadResult]:
        result = buffers().read(uri, start_line, end_line)
        status = f"(lines {result.start_line}-{result.end_line} of {result.total_lines}, {result.encoding}"
        if result.modified:
            status += "; unsaved buffer content"
        if result.externally_modified:
            status += f"; the file changed on disk since it was opened: {opens} reloads it"
        return record(result, result.content, status + ")")

    @server.tool(
        name=closes,
        title="Close file",
        annotations=hints("Close file", read_only=False, destructive=True, idempotent=True),
        description=(
            f"Close a file's buffer. Content a refused {saves} left unsaved is written with save_if_modified=true "
            "(the default) or discarded with false; was_modified says whether there was any."
        ),
    )
    @catching
    def file_close(
        uri: UriArg,
        save_if_modified: Annotated[bool, Field(description="Write unsaved buffer content before closing")] = True,
    ) -> Annotated[CallToolResult, ops.CloseResult]:
        result = buffers().close(uri, save_if_modified)
        if not result.was_open:
            return record(result, f"{result.uri} was not open")
        done = "saved its unsaved content" if result.saved else "discarded its unsaved content"
        return record(result, f"Closed {result.uri}" + (f"; {done}" if result.was_modified else ""))

    if all(mount.read_only for mount in vfs.mounts):
        return

    @server.tool(
        name=saves,
        title="Save file",
        annotations=hints("Save file", read_only=False, destructive=True),
        description=(
            "Replace a file's whole content (atomic on local disks) in its encoding and line endings; the previous "
            "version is kept as name~ unless backup=false. Refused (CONFLICT) when an open file changed on disk "
            "since it was opened, unless force=true."
        ),
    )
    @catching
    def file_save(
        uri: UriArg,
        content: Annotated[str, Field(description="The whole new text of the file")],
        create_if_not_exists: Annotated[bool, Field(description="Create a missing file (and its folders)")] = False,
        force: Annotated[bool, Field(description="Overwrite a change made on disk since the file was opened")] = False,
        backup: Annotated[bool, Field(description="Keep the previous version as name~")] = True,
    ) -> Annotated[CallToolResult, ops.SaveResult]:
        result = buffers().save(uri, content, create_if_not_exists, force, backup)
        verb = "Created" if result.created else "Saved"
        kept = f"; previous version in {result.backup}" if result.backup else ""
        return record(result, f"{verb} {result.uri} ({result.bytes_written} bytes, {result.encoding}){kept}")
