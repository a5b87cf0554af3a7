"""The ide profile (docs/profile-ide.md): editor buffers opened, read, saved and closed by URI.

Its table (``TOOLS``): the buffers live in ``vfs_mcp.ops.buffers.editor``, one set per MCP session
(``vfs_mcp.sessions``): one client never sees another's. ``file_open`` returns a handle the
other tools take: it finds the buffer from any request (the only way in a request without a
session). Names are ``file_open``...; ``--tool-names seed`` gives ``file/open``....
A server whose mounts are all read-only does not list ``file_save``.
"""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.buffers import editor as ops
from vfs_mcp.profiles.results import record
from vfs_mcp.profiles.table import Tool
from vfs_mcp.sessions import Slot, state_of
from vfs_mcp.settings import Settings

HandleArg = Annotated[str | None, Field(description="The handle file_open returned: finds the buffer from any request")]
UriArg = Annotated[
    str,
    Field(
        description="file:///abs/path for local folders (percent-encoding allowed), the mount URL otherwise "
        "(s3://bucket/key, memory://name/x)"
    ),
]


BUFFERS: Slot[ops.Buffers] = Slot("the open ide buffers")


def buffers(vfs: JailedFS, settings: Settings) -> ops.Buffers:
    """The calling session's buffers (one client never sees another's); outside any MCP
    session, one set for the filesystem."""

    def new_buffers() -> ops.Buffers:
        from vfs_mcp.changes import log_of

        return ops.Buffers(
            vfs.shared,
            max_read_bytes=settings.max_read_bytes,
            max_save_bytes=settings.max_write_bytes,
            stored=ops.StoredBuffers(log_of(vfs).store, vfs.shared),
        )

    return state_of(BUFFERS, new_buffers, vfs.kept).on(vfs)


def file_open(
    vfs: JailedFS,
    settings: Settings,
    uri: UriArg,
    line: Annotated[int | None, Field(description="1-based line (default 1)")] = None,
    column: Annotated[int | None, Field(description="1-based column (default 1)")] = None,
    encoding: Annotated[str | None, Field(description="Decode with this codec instead of detecting")] = None,
) -> Annotated[CallToolResult, ops.OpenResult]:
    result = buffers(vfs, settings).open(uri, line, column, encoding)
    note = " (unsaved content kept; not reloaded)" if result.modified else ""
    return record(
        result,
        f"Opened {result.buffer} at line {result.line}, column {result.column} "
        f"({result.encoding}, {result.total_lines} line{'' if result.total_lines == 1 else 's'}){note}",
    )


def file_read(
    vfs: JailedFS,
    settings: Settings,
    uri: UriArg,
    start_line: Annotated[int | None, Field(description="First line, 1-based (default 1)")] = None,
    end_line: Annotated[int | None, Field(description="Last line, inclusive (default: the last)")] = None,
    handle: HandleArg = None,
) -> Annotated[CallToolResult, ops.BufferRead]:
    result = buffers(vfs, settings).read(uri, start_line, end_line, handle)
    status = f"(lines {result.start_line}-{result.end_line} of {result.total_lines}, {result.encoding}"
    if result.modified:
        status += "; unsaved buffer content"
    if result.externally_modified:
        opens = settings.name("file_open", "file/open")
        status += f"; the file changed on disk since it was opened: {opens} reloads it"
    return record(result, result.content, status + ")")


def file_close(
    vfs: JailedFS,
    settings: Settings,
    uri: UriArg,
    save_if_modified: Annotated[bool, Field(description="Write unsaved buffer content before closing")] = True,
    handle: HandleArg = None,
) -> Annotated[CallToolResult, ops.CloseResult]:
    result = buffers(vfs, settings).close(uri, save_if_modified, handle)
    if not result.was_open:
        return record(result, f"{result.uri} was not open")
    done = "saved its unsaved content" if result.saved else "discarded its unsaved content"
    return record(result, f"Closed {result.uri}" + (f"; {done}" if result.was_modified else ""))


def file_save(
    vfs: JailedFS,
    settings: Settings,
    uri: UriArg,
    content: Annotated[str, Field(description="The whole new text of the file")],
    create_if_not_exists: Annotated[bool, Field(description="Create a missing file (and its folders)")] = False,
    force: Annotated[bool, Field(description="Overwrite a change made on disk since the file was opened")] = False,
    backup: Annotated[bool, Field(description="Keep the previous version as name~")] = True,
    handle: HandleArg = None,
) -> Annotated[CallToolResult, ops.SaveResult]:
    result = buffers(vfs, settings).save(uri, content, create_if_not_exists, force, backup, handle)
    verb = "Created" if result.created else "Saved"
    kept = f"; previous version in {result.backup}" if result.backup else ""
    return record(result, f"{verb} {result.uri} ({result.bytes_written} bytes, {result.encoding}){kept}")


TOOLS = (
    Tool(
        file_open,
        "Open file",
        "Open a text file in an editor buffer kept until {file_close}, with the cursor at line/column (1-based; "
        "out-of-range positions are clamped and the actual one returned). The encoding is detected and kept "
        "on save. Opening an open file again reloads it from disk.",
        original_name="file/open",
    ),
    Tool(
        file_read,
        "Read file",
        "Read a text file, or lines start_line..end_line (1-based, inclusive, clamped). An open file is read "
        "from its buffer; externally_modified=true means it changed on disk since ({file_open} reloads it).",
        original_name="file/read",
    ),
    Tool(
        file_close,
        "Close file",
        "Close a file's buffer. Content a refused {file_save} left unsaved is written with save_if_modified=true "
        "(the default) or discarded with false; was_modified says whether there was any.",
        read_only=False,
        destructive=True,
        idempotent=True,
        original_name="file/close",
        writes=False,
    ),
    Tool(
        file_save,
        "Save file",
        "Replace a file's whole content (atomic on local disks) in its encoding and line endings; the previous "
        "version is kept as name~ unless backup=false. Refused (CONFLICT) when an open file changed on disk "
        "since it was opened, unless force=true.",
        read_only=False,
        destructive=True,
        original_name="file/save",
    ),
)
