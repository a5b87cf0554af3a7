"""Default profile: line-targeted reads, edits and comparisons of text files."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.filesystem import JailedFS
from vfs_mcp.ops import compare, edit
from vfs_mcp.ops import lines as line_ops
from vfs_mcp.profiles.args import EncodingArg, FormatArg, PathArg
from vfs_mcp.settings import Settings
from vfs_mcp.tooling import catching, hints, ok, read_hints


def register_read(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that only read."""
    max_read = settings.max_read_bytes

    @server.tool(
        title="Read lines",
        annotations=read_hints("Read lines"),
        description=(
            "Read lines [offset, offset+limit) of a text file (0-based offset). Fast deep into huge files: paging "
            "reuses an index. Returns start_line, lines_returned, total_lines when known, has_more and next_offset."
        ),
    )
    @catching
    def read_file_lines(
        path: PathArg,
        offset: Annotated[int, Field(ge=0, description="0-based line to start at")] = 0,
        limit: Annotated[int | None, Field(ge=1, description="Lines to return (default: to the end)")] = None,
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, line_ops.LinesResult]:
        text, meta = line_ops.read_file_lines(vfs, path, offset, limit, encoding, max_read)
        return ok(meta, text)

    @server.tool(
        title="Head of file",
        annotations=read_hints("Head of file"),
        description="The first N lines of a text file (default 10). For a later range use read_file_lines.",
    )
    @catching
    def head_file(
        path: PathArg,
        lines: Annotated[int, Field(ge=1, description="How many lines")] = 10,
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, line_ops.LinesResult]:
        text, meta = line_ops.head_file(vfs, path, lines, encoding, max_read)
        return ok(meta, text)

    @server.tool(
        title="Tail of file",
        annotations=read_hints("Tail of file"),
        description="The last N lines of a text file (default 10), read from the end: as fast on a 1 GB log as on 1 KB.",
    )
    @catching
    def tail_file(
        path: PathArg,
        lines: Annotated[int, Field(ge=1, description="How many lines")] = 10,
        encoding: EncodingArg = "utf-8",
    ) -> Annotated[CallToolResult, line_ops.LinesResult]:
        text, meta = line_ops.tail_file(vfs, path, lines, encoding, max_read)
        return ok(meta, text)

    @server.tool(
        title="Compare files",
        annotations=read_hints("Compare files"),
        description=(
            "Unified diff of two text files (on any mounts). format='json' gives hunks and added/removed counts."
        ),
    )
    @catching
    def compare_files(
        file1: PathArg,
        file2: PathArg,
        encoding: EncodingArg = "utf-8",
        format: FormatArg = "text",
    ) -> Annotated[CallToolResult, compare.CompareResult]:
        result = compare.compare_files(vfs, file1, file2, encoding, settings.max_edit_bytes)
        return ok(result, result.diff or f"{result.file1} and {result.file2} are identical", format)


def register_write(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that change files."""

    @server.tool(
        title="Edit file",
        annotations=hints("Edit file", read_only=False, destructive=True),
        description=(
            "Replace text in a file: each edit's oldText must match one place (exactly, else with whitespace "
            "normalised, else fuzzily above 0.8 confidence); several places is CONFLICT unless replace_all. All "
            "edits apply or none. Keeps CRLF, encoding and final newline. Returns a unified diff; dry_run previews. "
            "To edit by line number use edit_file_at_line."
        ),
    )
    @catching
    def edit_file(
        path: PathArg,
        edits: Annotated[list[edit.TextEdit], Field(min_length=1, description="Applied in order")],
        encoding: EncodingArg = "utf-8",
        dry_run: Annotated[bool, Field(description="Return the diff without writing")] = False,
        options: Annotated[edit.EditOptions | None, Field(description="Matching fallbacks")] = None,
        expected_hash: Annotated[str | None, Field(description="sha256 the current content must have")] = None,
    ) -> Annotated[CallToolResult, edit.EditResult]:
        result = edit.edit_file(
            vfs, path, edits, encoding, dry_run, options, expected_hash, max_bytes=settings.max_edit_bytes
        )
        return ok(result, result.diff or "No changes")

    @server.tool(
        title="Edit lines",
        annotations=hints("Edit lines", read_only=False, destructive=True),
        description=(
            "Edit by 1-based line number: replace, insert_before, insert_after or delete. expected_content "
            "verifies a line before changing it (abort_on_verification_failure makes any mismatch change "
            "nothing). Numbers refer to the file before the call. Returns each edit's outcome and the diff."
        ),
    )
    @catching
    def edit_file_at_line(
        path: PathArg,
        line_edits: Annotated[list[edit.LineEdit], Field(min_length=1)],
        offset: Annotated[int, Field(ge=0, description="First line (0-based) edits may touch")] = 0,
        limit: Annotated[int | None, Field(ge=1, description="How many lines from offset edits may touch")] = None,
        relative_line_numbers: Annotated[bool, Field(description="line_number is 0-based from offset")] = False,
        abort_on_verification_failure: Annotated[bool, Field(description="Any mismatch: change nothing")] = False,
        encoding: EncodingArg = "utf-8",
        dry_run: Annotated[bool, Field(description="Return the outcome and diff without writing")] = False,
    ) -> Annotated[CallToolResult, edit.LineEditResult]:
        result = edit.edit_file_at_line(
            vfs,
            path,
            line_edits,
            offset,
            limit,
            relative_line_numbers,
            abort_on_verification_failure,
            encoding,
            dry_run,
            max_bytes=settings.max_edit_bytes,
        )
        summary = f"{result.applied} applied, {result.failed} not applied"
        failures = [
            f"line {o.line_number}: {o.message} (actual: {o.actual_content!r})" for o in result.edits if not o.applied
        ]
        return ok(result, "\n".join([summary, *failures, result.diff]))
