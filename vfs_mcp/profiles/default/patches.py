"""Default profile: multi-file patches (``apply_patch``)."""

from __future__ import annotations

from mcp_types import CallToolResult

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.edits import patch as patching
from vfs_mcp.ops.text.names import plural
from vfs_mcp.profiles.results import answer
from vfs_mcp.settings import Settings


def patch_text(result: patching.PatchResult) -> str:
    """One line per file, then the diff, then whether it was written."""
    rows = [
        f"{f.action} {f.path}" + (f" -> {f.moved_to}" if f.moved_to else "") + f" (+{f.added} -{f.removed})"
        for f in result.files
    ]
    outcome = "[dry run: nothing written]" if result.dry_run else f"[applied to {plural(len(result.files), 'file')}]"
    return "\n".join([*rows, "", result.diff.rstrip("\n"), outcome]) if result.diff else "\n".join([*rows, outcome])


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
