"""Default profile: line-targeted reads, edits and comparisons of text files."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops import compare, edit
from vfs_mcp.ops import line_edits as numbered
from vfs_mcp.ops import lines as line_ops
from vfs_mcp.ops import patch as patching
from vfs_mcp.ops.names import plural
from vfs_mcp.profiles.args import EncodingArg, FormatArg, Hidden, PathArg
from vfs_mcp.profiles.results import answer, catching, hints, read_hints, report
from vfs_mcp.settings import Settings


def lines_footer(meta: line_ops.LinesResult, tail: bool = False) -> str:
    """The line after the text of a line read: which lines these are, and how to go on."""
    of = f" of {meta.total_lines}" if meta.total_lines is not None else ""
    if tail:
        where = f"last {plural(meta.lines_returned, 'line')}{of}"
        more = "; more precede" if meta.has_more else ""
    else:
        where = f"offset {meta.start_line}, {plural(meta.lines_returned, 'line')}{of}"
        more = f"; more: offset={meta.next_offset}" if meta.has_more else "; end of file"
    cut = f"; cut at the {meta.lines_returned}th line by the byte limit" if meta.truncated else ""
    return f"[{meta.path}: {where}{more}{cut}]"


def register_read(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that only read."""
    max_read = settings.max_read_bytes

    @server.tool(
        title="Read lines",
        annotations=read_hints("Read lines"),
        description="Lines of a text file from a 0-based offset; limit: how many (default all). Fast deep in huge files.",
    )
    @catching
    def read_file_lines(
        path: PathArg,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int | None, Field(ge=1)] = None,
        encoding: EncodingArg = "utf-8",
    ) -> CallToolResult:
        text, meta = line_ops.read_file_lines(vfs, path, offset, limit, encoding, max_read)
        return answer(text, lines_footer(meta), data=meta)

    @server.tool(
        title="Head of file",
        annotations=read_hints("Head of file"),
        description="First lines of a text file.",
    )
    @catching
    def head_file(
        path: PathArg, lines: Annotated[int, Field(ge=1)] = 10, encoding: EncodingArg = "utf-8"
    ) -> CallToolResult:
        text, meta = line_ops.head_file(vfs, path, lines, encoding, max_read)
        return answer(text, lines_footer(meta), data=meta)

    @server.tool(
        title="Tail of file",
        annotations=read_hints("Tail of file"),
        description="Last lines of a text file, read from the end (fast on huge logs).",
    )
    @catching
    def tail_file(
        path: PathArg, lines: Annotated[int, Field(ge=1)] = 10, encoding: EncodingArg = "utf-8"
    ) -> CallToolResult:
        text, meta = line_ops.tail_file(vfs, path, lines, encoding, max_read)
        return answer(text, lines_footer(meta, tail=True), data=meta)

    @server.tool(
        title="Compare files",
        annotations=read_hints("Compare files"),
        description="Unified diff of two text files.",
    )
    @catching
    def compare_files(
        file1: PathArg, file2: PathArg, encoding: EncodingArg = "utf-8", format: FormatArg = "text"
    ) -> CallToolResult:
        result = compare.compare_files(vfs, file1, file2, encoding, settings.max_edit_bytes)
        return report(result, result.diff or f"{result.file1} and {result.file2} are identical", format)


def patch_text(result: patching.PatchResult) -> str:
    """One line per file, then the diff, then whether it was written."""
    rows = [
        f"{f.action} {f.path}" + (f" -> {f.moved_to}" if f.moved_to else "") + f" (+{f.added} -{f.removed})"
        for f in result.files
    ]
    outcome = "[dry run: nothing written]" if result.dry_run else f"[applied to {plural(len(result.files), 'file')}]"
    return "\n".join([*rows, "", result.diff.rstrip("\n"), outcome]) if result.diff else "\n".join([*rows, outcome])


def edit_text(result: edit.EditResult) -> str:
    """The diff, how each edit that did not match exactly was found, and whether it was written."""
    notes = [
        f"edit {m.edit}: {m.strategy} match at lines {m.line_start}-{m.line_end}"
        + (f" (confidence {m.confidence:.2f})" if m.strategy == "fuzzy" else "")
        + (f", {m.occurrences} places" if m.occurrences > 1 else "")
        for m in result.matches
        if m.strategy != "exact" or m.occurrences > 1
    ]
    if result.dry_run:
        outcome = "[dry run: nothing written]"
    elif result.changed:
        outcome = f"[wrote {result.path}, sha256 {result.sha256}]"
    else:
        outcome = "[no change: the new text equals the old]"
    return "\n".join([result.diff.rstrip("\n") or "No changes", *notes, outcome])


def line_edit_text(result: numbered.LineEditResult) -> tuple[str, str]:
    """(status, text): the first line says how many edits were applied, so a partial outcome
    cannot be missed; then each edit not applied, then the diff."""
    total = len(result.edits)
    would = "would apply" if result.dry_run else "applied"
    if result.failed == 0:
        status, head = "applied", f"{'Would apply' if result.dry_run else 'Applied'} {plural(total, 'line edit')}"
    elif result.applied == 0:
        status, head = "none", f"NOT APPLIED: none of {plural(total, 'line edit')} {would}; nothing changed"
    else:
        status = "partial"
        head = f"PARTIAL: {would} {result.applied} of {plural(total, 'line edit')}; {result.failed} not (see below)"
    failures = [
        f"line {o.line_number}: not applied, {o.message} (it holds {o.actual_content!r})"
        for o in result.edits
        if not o.applied
    ]
    return status, "\n".join([head, *failures, result.diff])


def register_write(server: MCPServer, vfs: JailedFS, settings: Settings) -> None:
    """Tools that change files."""

    @server.tool(
        title="Edit file",
        annotations=hints("Edit file", read_only=False, destructive=True),
        description=(
            "Replace text: each oldText must match one place (exactly, else whitespace-normalised, else fuzzily), "
            "or all with replace_all; else CONFLICT. All edits or none; keeps line endings. Returns a diff; dry_run "
            "previews."
        ),
    )
    @catching
    def edit_file(
        path: PathArg,
        edits: Annotated[list[edit.TextEdit], Field(min_length=1)],
        encoding: EncodingArg = "utf-8",
        dry_run: bool = False,
        options: Annotated[edit.EditOptions | None, Field(description="fallbacks, all on")] = None,
        expected_hash: str | None = None,
    ) -> CallToolResult:
        result = edit.edit_file(
            vfs, path, edits, encoding, dry_run, options, expected_hash, max_bytes=settings.max_edit_bytes
        )
        return answer(edit_text(result), data=result)

    @server.tool(
        title="Apply patch",
        annotations=hints("Apply patch", read_only=False, destructive=True),
        description=(
            "Apply a multi-file patch, all files or none: a unified diff (git diff) or *** Begin Patch format "
            "(Update/Add/Delete File, Move to). Hunks are found by their lines, not line numbers. path: base "
            "for relative names. Returns per-file counts and the diff."
        ),
    )
    @catching
    def apply_patch(patch: str, path: str | None = None, dry_run: bool = False) -> CallToolResult:
        result = patching.apply_patch(
            vfs,
            patch,
            path,
            dry_run,
            max_bytes=settings.max_edit_bytes,
            max_write=settings.max_write_bytes,
            max_diff=settings.max_read_bytes,
        )
        return answer(patch_text(result), data=result)

    @server.tool(
        title="Edit lines",
        annotations=hints("Edit lines", read_only=False, destructive=True),
        description=(
            "Edit by 1-based line number (as numbered before the call). expected_content verifies a line first: a "
            "mismatch skips that edit, or every edit with abort_on_verification_failure."
        ),
    )
    @catching
    def edit_file_at_line(
        path: PathArg,
        line_edits: Annotated[list[numbered.LineEdit], Field(min_length=1)],
        abort_on_verification_failure: bool = False,
        encoding: EncodingArg = "utf-8",
        dry_run: bool = False,
        # Seed 000's window: absolute line numbers say the same, so these are accepted, not listed.
        offset: Annotated[int, Field(ge=0), Hidden] = 0,
        limit: Annotated[int | None, Field(ge=1), Hidden] = None,
        relative_line_numbers: Annotated[bool, Hidden] = False,
    ) -> CallToolResult:
        result = numbered.edit_file_at_line(
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
        status, text = line_edit_text(result)
        return answer(text, data={**result.model_dump(mode="json"), "status": status})
