"""Default profile: edits of text files by line number (``edit_file_at_line``)."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.edits import numbered
from vfs_mcp.ops.text.names import plural
from vfs_mcp.profiles.args import Hidden, PathArg, TextCoding
from vfs_mcp.profiles.results import answer
from vfs_mcp.settings import Settings


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
