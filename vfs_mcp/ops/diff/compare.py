"""Comparing two text files (on any mounts) as a unified diff."""

from __future__ import annotations

from pydantic import BaseModel, Field

from vfs_mcp.jail.filesystem import JailedFS
from vfs_mcp.ops.diff.unified import DEFAULT_MAX_DIFF_CHARS, diff, rendered
from vfs_mcp.ops.text.document import DEFAULT_MAX_EDIT_BYTES, TextFile
from vfs_mcp.ops.text.encoding import printable


class CompareResult(BaseModel):
    file1: str
    file2: str
    identical: bool
    added: int
    removed: int
    cut: str | None = Field(None, description="What the diff leaves out, when it is not whole")
    hunks: list[dict[str, int | list[str]]] = Field(
        description="old_start, old_lines, new_start, new_lines, and lines: ' ' context, '-' removed, '+' added"
    )
    diff: str


def compare_files(
    vfs: JailedFS,
    file1: str,
    file2: str,
    encoding: str = "utf-8",
    max_bytes: int = DEFAULT_MAX_EDIT_BYTES,
    max_diff: int = DEFAULT_MAX_DIFF_CHARS,
) -> CompareResult:
    """The diff of two text files, its hunks at most ``max_diff`` characters (``unified.diff``)."""
    old, name1 = _text(vfs, file1, encoding, max_bytes)
    new, name2 = _text(vfs, file2, encoding, max_bytes)
    changed = diff(old, new, max_chars=max_diff)
    found = [hunk.fields(printable) for hunk in changed.hunks]
    notes = changed.notes()
    return CompareResult(
        file1=name1,
        file2=name2,
        identical=not (changed.added or changed.removed),
        added=changed.added,
        removed=changed.removed,
        cut=" ".join(notes) if notes else None,
        hunks=found,
        diff=rendered(changed, name1, name2),
    )


def _text(vfs: JailedFS, path: str, encoding: str, max_bytes: int) -> tuple[str, str]:
    """A file's text with its own line endings, and its name as results write it (its bytes
    are not kept beside the text)."""
    doc = TextFile.load(vfs, vfs.resolve(path), encoding, max_bytes)
    return doc.raw, doc.target.display
