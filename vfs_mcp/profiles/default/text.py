"""Default profile: edits of text files by their text (patches are in ``patches``, edits by
line number in ``line_edits``, line reads in ``lines``, comparisons in ``comparisons``)."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.edits import replace as edit
from vfs_mcp.profiles.args import EncodingArg, Hidden, PathArg
from vfs_mcp.profiles.results import answer
from vfs_mcp.settings import Settings


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
