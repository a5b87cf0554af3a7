"""Default profile: edits, patches and comparisons of text files (line reads are in ``lines``)."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.diff import compare
from vfs_mcp.ops.edits import numbered
from vfs_mcp.ops.edits import patch as patching
from vfs_mcp.ops.edits import replace as edit
from vfs_mcp.ops.text.names import plural
from vfs_mcp.profiles.args import EncodingArg, FormatArg, Hidden, PathArg, TextCoding
from vfs_mcp.profiles.results import answer, report
from vfs_mcp.settings import Settings


def compare_files(
    vfs: JailedFS,
    settings: Settings,
    file1: PathArg,
    file2: PathArg,
    encoding: TextCoding = "utf-8",
    format: FormatArg = "text",
) -> CallToolResult:
    result = compare.compare_files(vfs, file1, file2, encoding, settings.max_edit_bytes, settings.diff_chars)
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


def edit_file(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    edits: Annotated[list[edit.TextEdit], Field(min_length=1)],
    encoding: EncodingArg = "utf-8",
    dry_run: bool = False,
    options: Annotated[edit.EditOptions | None, Hidden] = None,  # the fallbacks, all on: rarely turned off
    expected_hash: str | None = None,
) -> CallToolResult:
    limit, shown = settings.max_edit_bytes, settings.diff_chars
    result = edit.edit_file(vfs, path, edits, encoding, dry_run, options, expected_hash, limit, shown)
    return answer(edit_text(result), data=result)


def apply_patch(
    vfs: JailedFS, settings: Settings, patch: str, path: str | None = None, dry_run: bool = False
) -> CallToolResult:
    result = patching.apply_patch(
        vfs,
        patch,
        path,
        dry_run,
        max_bytes=settings.max_edit_bytes,
        max_write=settings.max_write_bytes,
        max_diff=settings.diff_chars,
    )
    return answer(patch_text(result), data=result)


def edit_file_at_line(
    vfs: JailedFS,
    settings: Settings,
    path: PathArg,
    line_edits: Annotated[list[numbered.LineEdit], Field(min_length=1)],
    abort_on_verification_failure: bool = False,
    encoding: TextCoding = "utf-8",
    dry_run: bool = False,
    # An older window (docs/clients.md): absolute line numbers say the same, so these are accepted, not listed.
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
        max_diff=settings.diff_chars,
    )
    status, text = line_edit_text(result)
    return answer(text, data={**result.model_dump(mode="json"), "status": status})
